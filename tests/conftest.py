"""Fixtures every compiling test shares: the cpu target, the run's object cache (a kernel shared
by several test models compiles once in the whole run, whichever xdist worker needs it first:
shared_cache.py) and build_spec, a spec built and loaded on the cpu backend
(tests/backends/cpu/helpers.py).

The run's cache folder is named by the main process before the xdist workers start, so they all
inherit it, and removed at the end when that process made it. So are the workers' thread counts:
xdist runs a test per core already, and the threads PyTorch and NumPy's BLAS start on top of that
only oversubscribe the cores and spin while they wait (OMP_NUM_THREADS=1 for them); the built
libraries' own pool keeps its default, every core (AIT_NUM_THREADS, which it reads first).

The run's processes take no transparent huge pages (prctl PR_SET_THP_DISABLE, which the workers
and every process they start inherit): the libraries' big buffers and NumPy's large arrays ask
for them (MADV_HUGEPAGE), and on a busy machine the kernel compacts memory for each such fault
in the faulting process, seconds of system time per large model for what is only a speed hint.
The advice is still given and recorded (tests/codegen/test_buffer.py checks it).

The files the run collects are recorded (collected_test_files), so that tests/test_collection.py
reads the default run's own collection instead of collecting every file again in a subprocess."""

from __future__ import annotations

import ctypes
import os
import shutil
import sys

import pytest

from ait_build.backends import toolchain_for
from ait_build.pipeline import emit, find_target
from backends.cpu.helpers import CModel, build_library
from shared_cache import SESSION_TEMP, VARIABLE, cache_folder, make_run_folder


PR_SET_THP_DISABLE = 41  # linux/prctl.h


def no_transparent_huge_pages() -> None:
    """This process and its children take no transparent huge pages (Linux; elsewhere nothing)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)


def pytest_configure(config):
    no_transparent_huge_pages()
    if hasattr(config, "workerinput"):
        return  # a worker: the folder and the thread counts came with its environment
    if config.getoption("numprocesses", None) and "OMP_NUM_THREADS" not in os.environ:
        os.environ.setdefault("AIT_NUM_THREADS", str(len(os.sched_getaffinity(0))))
        os.environ["OMP_NUM_THREADS"] = "1"
    made = make_run_folder()
    if made:
        config.add_cleanup(lambda: (shutil.rmtree(made, ignore_errors=True),
                                    os.environ.pop(VARIABLE, None)))


# Disk: what a passing test or module wrote under the run's temp dir (built models and their
# weights: gigabytes over the run) is emptied when it ends; a failure keeps its files to look at.
# The folders themselves stay, empty: pytest numbers new ones after the highest it finds, and a
# reused path would make dlopen hand back the library an earlier test loaded from it.
FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        item.stash[FAILED] = True
    return report


def _empty(folder) -> None:
    """What `folder` holds, as far as it can go (a test may leave a file it made read-only, or
    a process it started may still be removing its own; a test may have removed the folder)."""
    if not os.path.isdir(folder):
        return
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass


@pytest.fixture(autouse=True)
def free_test_temp(request):
    """A passing test's tmp_path is emptied when the test ends."""
    yield
    folder = (getattr(request.node, "funcargs", None) or {}).get("tmp_path")
    if folder is not None and not request.node.stash.get(FAILED, False):
        _empty(folder)


@pytest.fixture(scope="module", autouse=True)
def free_module_temp(request, tmp_path_factory):
    """The folders a module's fixtures made under the run's temp dir are emptied when the module
    ends, unless one of its tests failed. A session fixture's folder, which later modules use, is
    named SESSION_TEMP... and stays."""
    base = tmp_path_factory.getbasetemp()
    before, failed = set(os.listdir(base)), request.session.testsfailed
    yield
    if request.session.testsfailed == failed:
        for name in set(os.listdir(base)) - before:
            if not name.startswith(SESSION_TEMP) and (base / name).is_dir():
                _empty(base / name)


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_COLLECTED: set = set()  # test files (relative to ROOT) this process collected


def pytest_itemcollected(item):
    """Every test's file, before -m or -k deselect any (an xdist worker collects every test)."""
    _COLLECTED.add(os.path.relpath(str(item.path), ROOT))


def pytest_collectreport(report):
    """A module that skips itself (importorskip) was found all the same."""
    if report.skipped and report.nodeid.endswith(".py"):
        _COLLECTED.add(os.path.normpath(report.nodeid))


@pytest.fixture(scope="session")
def collected_test_files(request):
    """The test files this run collected when it collected the whole of tests/ (the default
    run), else None."""
    config = request.config
    args = [os.path.join(str(config.invocation_params.dir), a.split("::")[0]) for a in config.args]
    if not args or any(os.path.normpath(a) not in (ROOT, os.path.join(ROOT, "tests")) for a in args):
        return None
    return set(_COLLECTED)


@pytest.fixture(scope="session")
def cpu_target():
    return find_target("cpu")


@pytest.fixture(scope="session")
def object_cache():
    return cache_folder("objects")


@pytest.fixture(scope="session")
def build_spec(cpu_target, object_cache, tmp_path_factory):
    """build_spec(spec_path, optimize=True) -> (CModel, out_dir, emission)."""
    tc = toolchain_for(cpu_target)
    built = []

    def run(spec_path: str, optimize: bool = True, name: str = "m"):
        out_dir = str(tmp_path_factory.mktemp(name))
        emission = emit(spec_path, cpu_target, out_dir, optimize=optimize)
        lib = build_library(tc, out_dir, emission, object_cache)
        model = CModel(out_dir, emission, lib)
        built.append(model)
        return model, out_dir, emission

    yield run
    for m in built:
        m.close()
