"""Building a library with SCons: the SConstruct's variables, builders and scanners.

    scons.py       variables, the generation builder, scanners, compile and link rules, CacheDir
    commands.py    compile and link as argument lists (no shell, no `$` substitution)
    integrity.py   outputs and cache entries checked against recorded hashes
    progress.py    the `[k/n]` lines and slow steps' times
    lock.py        one build per checkout
    spec_list.py   the `spec=` variable's comma-separated paths
"""
