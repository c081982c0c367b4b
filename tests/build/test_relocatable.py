"""A built cpu library finds its BLAS through its `$ORIGIN` rpath, in its own folder (the build
carries the BLAS it linked and the licences), never in the virtualenv that built it: the build
folder moved elsewhere still loads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from buildproj import MODEL

# the file the BLAS package named in the manifest puts beside the library
BLAS_FILES = {"scipy-openblas32": "libscipy_openblas.so", "mkl": "libmkl_core.so.3"}


def _runpath(library: str) -> str:
    dynamic = subprocess.run(["readelf", "-d", library], capture_output=True, text=True,
                             check=True).stdout
    (line,) = [line for line in dynamic.splitlines() if "(RUNPATH)" in line or "(RPATH)" in line]
    return line.split("[", 1)[1].rstrip("]")


def _blas_name(built) -> tuple:
    with open(built.out("manifest.json")) as fh:
        (blas,) = json.load(fh)["compiler"]["libraries"]
    return blas, BLAS_FILES[blas]


def test_the_library_finds_its_blas_beside_itself(built):
    assert _runpath(built.out(f"lib{MODEL}.so")) == "$ORIGIN"  # no folder of this machine
    blas, name = _blas_name(built)
    assert os.path.isfile(built.out(name))
    assert any(n.startswith(blas) for n in os.listdir(built.out("licenses")))


# loads a build folder, runs it and prints the output's shape and the BLAS files the process mapped
LOAD = """
import sys, numpy as np
from ait_build.runtime import Model
with Model(sys.argv[1]) as m:
    print(m.run({'x': np.ones((2, 32), np.float32)})['softmax'].shape)
with open('/proc/self/maps') as fh:
    print(sorted({l.split()[-1] for l in fh if '/' + sys.argv[2].split('.so')[0] in l
                  and 'numpy.libs' not in l}))  # NumPy's own OpenBLAS is another library
"""


def test_a_moved_build_folder_loads_its_own_blas(built, tmp_path):
    """Copied elsewhere (the carried BLAS with it), the folder loads in a fresh process whose
    environment names no library folder, and the process maps the copy's BLAS."""
    moved = tmp_path / "moved"
    shutil.copytree(built.out(), moved, ignore=shutil.ignore_patterns("src", "obj"),
                    copy_function=os.link)  # a new path is all the loader sees
    _, name = _blas_name(built)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    proc = subprocess.run([sys.executable, "-c", LOAD, str(moved), name], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    shape, mapped = proc.stdout.strip().splitlines()
    assert shape == "(2, 16)"
    mapped = eval(mapped)
    assert str(moved / name) in mapped and all(p.startswith(str(moved)) for p in mapped), mapped
