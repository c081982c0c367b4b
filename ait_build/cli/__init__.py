"""The `ait-build` command line: one module per command, each listed in commands.py with its
DESCRIPTION, EXAMPLES, add_arguments(parser) and run(args); the work is done by the stages and
tools they call.

    main.py        the parser built from commands.py, exit statuses, internal errors
    commands.py    the table of commands: (name, module, one-line help)
    args.py        argument values checked where argparse reads them
    check.py, graph.py, reference.py, build.py, run.py, bench.py, profile.py, init.py,
    targets.py     the commands (`import` is importers/cli.py)
    graph_view.py  text, JSON and Graphviz views of a graph
"""
