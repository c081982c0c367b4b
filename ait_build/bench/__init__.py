"""`ait-build bench` (its arguments: cli/bench.py): a built model's latency beside PyTorch and
ONNX Runtime.

    run.py          a bench run: the build, the cpu timing loop, the report and its table
    competitors.py  the sides (our library, PyTorch, ONNX Runtime) and the Context they share
    sides.py        the cpu sides in processes of their own, taking turns
    cuda.py         cuda builds: CUDA events, eager, CUDA graph and torch.compile
    models.py       the zoo specs' PyTorch twins
    source_twin.py  what an imported spec is compared with: the model its `source:` names
    zoo.py          the public benchmark: import, build and bench steps within a time budget
    zoo_specs.py    its models and the specs it imports them to (random weights)
    zoo_models.py   its transformers factories
    zoo_table.py    its table
    steps.py        `--steps`: the per-node table of one case
    step_report.py  per-node time, FLOPs and bytes against the target's roofline
"""
