"""`ait-build profile`: measure every candidate configuration of a spec's GEMMs and convs on the
GPU and check the winners into profiles/<target>.yaml, which builds then read
(codegen/tuning.py; the file's format: spec/profile.py).

    jobs.py      the spec's tuned calls -> one job per kernel group, with concrete problems
    harness.py   a job -> harness sources (the group's kernel in chunks of candidates + a driver)
    build.py     SCons rules compiling the harnesses in parallel, through the build's CacheDir
    measure.py   runs the harnesses, survives crashing candidates, keeps a journal (resumable)
    report.py    the winners and the summary lines
    run.py       the command's work (its arguments: cli/profile.py)
"""
