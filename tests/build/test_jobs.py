"""The default number of parallel compile jobs (ait_build/build/scons.py): one per core, unless the
available memory cannot hold that many compilers at their peak (CUTLASS sm90 files take 4-5 GB
in nvcc), and what the build prints when memory decides."""

from __future__ import annotations

from ait_build.backends import get_backend
from ait_build.build.scons import available_memory, default_jobs

GIB = 1 << 30


def test_cores_decide_when_memory_is_plenty():
    assert default_jobs({"cuda"}, 16, 128 * GIB) == (16, "")
    assert default_jobs({"cpu"}, 2, 24 * GIB) == (2, "")


def test_memory_caps_cuda_builds_with_a_note():
    jobs, why = default_jobs({"cpu", "cuda"}, 64, 40 * GIB)
    assert jobs == 40 * GIB // get_backend("cuda").compile_job_memory == 8
    assert why.startswith("8 parallel compile jobs, not 64: 40.0 GiB of memory available")
    assert "-j N overrides" in why


def test_at_least_one_job_and_unknown_memory_means_cores():
    assert default_jobs({"cuda"}, 4, 2 * GIB)[0] == 1
    assert default_jobs({"cuda"}, 4, None) == (4, "")


def test_available_memory_reads_meminfo(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n")
    assert available_memory(str(meminfo)) == 20000000 * 1024
    meminfo.write_text("MemTotal:       24000000 kB\n")
    assert available_memory(str(meminfo)) is None
    assert available_memory(str(tmp_path / "missing")) is None
