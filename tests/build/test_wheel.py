"""The wheel carries everything: built from this checkout, installed into a fresh virtualenv and
used from folders that hold no checkout, `ait-build init`, `scons target=cpu`, `ait-build
run/build/graph/bench/targets` work and write into the user's folder (issue 11's done-when); the
packaged library loads in a second environment that has the runtime but no BLAS (issue 28's)."""

from __future__ import annotations

import json
import os
import shutil
import tarfile

import numpy as np
import pytest

from installed import REPO, build_wheel, make_venv, run, user_env


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> dict:
    """A fresh virtualenv with only the wheel (and its dependencies) installed; its environment."""
    root = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(str(root))
    bin_dir = make_venv(str(root / "venv"))
    env = user_env(bin_dir)
    run(["python", "-m", "pip", "install", "-q", wheel], cwd=str(root), env=env)
    return env


# runs a build or package folder on fixed inputs; prints which BLAS packages Python can find and
# which BLAS library the process mapped
RUN_MODEL = """
import importlib.util, sys
import numpy as np
from ait_build.runtime import Model
with Model(sys.argv[1]) as model:
    x = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)
    np.save(sys.argv[2], model.run({"x": x})["softmax"])
print(importlib.util.find_spec("scipy_openblas32"), importlib.util.find_spec("mkl"))
with open("/proc/self/maps") as fh:
    print(" ".join(sorted({line.split()[-1] for line in fh if "blas" in line or "libmkl" in line
                           if "numpy" not in line})))
"""
RUNTIME_PACKAGES = ("ait_build", "numpy", "numpy.libs", "ml_dtypes")  # what Model() imports


def runtime_only_env(venv: dict, path) -> dict:
    """A second virtualenv (no pip) that imports only ait-build's runtime and its NumPy and
    ml_dtypes, through a .pth, from the first one: no scipy-openblas32, no MKL."""
    run(["python", "-m", "venv", "--without-pip", str(path)], cwd=os.path.dirname(path), env=venv)
    env = user_env(os.path.join(str(path), "bin"))
    site = run(["python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
               cwd=str(path), env=env).stdout.strip()
    source = run(["python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                 cwd=str(path), env=venv).stdout.strip()
    shared = os.path.join(str(path), "runtime-packages")
    os.makedirs(shared)
    for name in RUNTIME_PACKAGES:
        if os.path.exists(os.path.join(source, name)):
            os.symlink(os.path.join(source, name), os.path.join(shared, name))
    with open(os.path.join(site, "runtime.pth"), "w") as fh:
        fh.write(shared + "\n")
    return env


def test_the_package_comes_from_the_wheel(venv, tmp_path):
    out = run(["python", "-c", "import ait_build, ait_build.ir.resources as r; "
               "print(ait_build.__file__); print(r.data_dir('templates'))"],
              cwd=str(tmp_path), env=venv).stdout.split()
    site = os.path.join(venv["VIRTUAL_ENV"], "lib")
    assert all(p.startswith(site) for p in out), out  # nothing from the checkout
    assert os.path.isfile(os.path.join(out[1], "cuda", "include", "curand_kernel.h"))
    assert run(["ait-build", "--version"], cwd=str(tmp_path), env=venv).stdout.startswith("ait-build ")


def test_init_build_run_in_a_new_repository(venv, tmp_path):
    run(["ait-build", "init", "demo"], cwd=str(tmp_path), env=venv)
    demo = str(tmp_path / "demo")
    for rel in ("SConstruct", ".gitignore", "specs/mlp.yaml", "targets/README.md",
                ".github/workflows/ait-build.yml"):
        assert os.path.isfile(os.path.join(demo, rel)), rel
    run(["scons", "-j2", "target=cpu"], cwd=demo, env=venv)
    assert os.path.isfile(os.path.join(demo, "build", "cpu", "mlp", "libmlp.so"))
    out = run(["ait-build", "run", "build/cpu/mlp", "--random-input", "--check"], cwd=demo, env=venv)
    assert "check softmax:" in out.stdout and out.stdout.rstrip().endswith("ok"), out.stdout
    with open(os.path.join(demo, "build", "cpu", "mlp", "manifest.json")) as fh:
        manifest = json.load(fh)
    assert manifest["ait_build_version"] == run(["ait-build", "--version"], cwd=demo,
                                                env=venv).stdout.split()[1]

    # the CLI from a subfolder: the project around the working directory
    graph = run(["ait-build", "graph", "../specs/mlp.yaml", "--target", "cpu"],
                cwd=os.path.join(demo, "specs"), env=venv).stdout
    assert "linear" in graph
    bench = run(["ait-build", "bench", "mlp", "--target", "cpu", "--runs", "3", "--warmup", "1",
                 "--json", "bench.json"], cwd=demo, env=venv)
    assert "| batch=1 |" in bench.stdout and os.path.isfile(os.path.join(demo, "bench.json"))

    # the package loads where the runtime is installed but no BLAS
    out = run(["ait-build", "package", "build/cpu/mlp", "-o", "mlp.tar.gz"], cwd=demo, env=venv)
    assert out.stdout.startswith("wrote mlp.tar.gz"), out.stdout
    run(["python", "-c", RUN_MODEL, "build/cpu/mlp", "here.npy"], cwd=demo, env=venv)
    elsewhere = tmp_path / "elsewhere"
    with tarfile.open(os.path.join(demo, "mlp.tar.gz")) as tar:
        tar.extractall(elsewhere, filter="data")
    clean = runtime_only_env(venv, tmp_path / "clean")
    found = run(["python", "-c", RUN_MODEL, "mlp", "there.npy"], cwd=str(elsewhere), env=clean)
    blas_specs, mapped = found.stdout.splitlines()[-2:]
    assert blas_specs == "None None", "the second environment must not see a BLAS package"
    assert mapped == str(elsewhere / "mlp" / "libscipy_openblas.so"), mapped  # the carried one
    np.testing.assert_array_equal(np.load(os.path.join(demo, "here.npy")),
                                  np.load(elsewhere / "there.npy"))
    run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=str(elsewhere / "mlp"))


def test_a_project_target_overrides_and_extends_the_stock_ones(venv, tmp_path):
    run(["ait-build", "init", "demo"], cwd=str(tmp_path), env=venv)
    demo = str(tmp_path / "demo")
    run(["ait-build", "targets", "--copy", "cpu"], cwd=demo, env=venv)
    with open(os.path.join(demo, "targets", "cpu.yaml")) as fh:
        text = fh.read()
    with open(os.path.join(demo, "targets", "cpu_o2.yaml"), "w") as fh:
        fh.write(text.replace("\nname: cpu\n", "\nname: cpu_o2\n").replace("-O3", "-O2"))
    listing = run(["ait-build", "targets"], cwd=demo, env=venv).stdout
    rows = {line.split()[0]: line.split() for line in listing.splitlines()[1:] if line.strip()}
    assert rows["cpu"][3] == "project" and rows["cpu_o2"][3] == "project"
    assert rows["h200"][3] == "stock"
    run(["scons", "-j2", "target=cpu_o2"], cwd=demo, env=venv)
    with open(os.path.join(demo, "build", "cpu_o2", "mlp", "manifest.json")) as fh:
        assert "-O2" in json.load(fh)["compiler"]["flags"]


def test_build_from_a_folder_without_sconstruct(venv, tmp_path):
    """`ait-build build my.yaml` in a plain folder writes that folder's build/, nowhere else."""
    os.makedirs(tmp_path / "loose")
    shutil.copy(os.path.join(REPO, "specs", "mlp.yaml"), tmp_path / "loose" / "my.yaml")
    before = os.listdir(os.path.join(REPO, "build")) if os.path.isdir(os.path.join(REPO, "build")) else []
    out = run(["ait-build", "build", "my.yaml", "-j", "2"], cwd=str(tmp_path / "loose"), env=venv)
    assert "built build/cpu/mlp/libmlp.so" in out.stdout, out.stdout
    assert os.path.isfile(tmp_path / "loose" / "build" / "cpu" / "mlp" / "libmlp.so")
    after = os.listdir(os.path.join(REPO, "build")) if os.path.isdir(os.path.join(REPO, "build")) else []
    assert before == after


def test_the_stock_profiles_come_with_the_wheel(venv, tmp_path):
    """profiles/h200.yaml travels as ait_build/_data/profiles/, where the stock h200 target's
    profile_cache points, and reads as a profile with entries."""
    script = ("from ait_build.spec.profile import load_profile, profile_path\n"
              "from ait_build.pipeline import find_target\n"
              "t = find_target('h200')\n"
              "print(profile_path(t), len(load_profile(t)))\n")
    path, entries = run(["python", "-c", script], cwd=str(tmp_path), env=venv).stdout.split()
    assert path.startswith(venv["VIRTUAL_ENV"]) and path.endswith("_data/profiles/h200.yaml")
    assert int(entries) > 10
