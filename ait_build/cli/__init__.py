"""The `ait-build` command line.

    main.py        the parser, `check`, `graph` and `reference`, exit statuses
    args.py        argument values checked where argparse reads them
    build.py       `build` (SCons in a subprocess) and `run`
    project.py     `init` and `targets`
    graph_view.py  text, JSON and Graphviz views of a graph
"""
