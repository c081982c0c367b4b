"""The cpu thread pool (templates/cpu/include/ait_pool.h) on its own: a small C++ program
includes the header and reports what each job did, so the test sees chunk claiming, the caller's
share, each participant's own chunks, the thread count from the environment, and how a pool with
more threads than cores behaves (the case of a machine busy with other work), and that workers
stay awake through a model run (ThreadPool::Running) but sleep between runs."""

from __future__ import annotations

import os
import subprocess

import pytest

from ait_build.codegen.render import templates_dir
from ait_build.pipeline import find_target

PROGRAM = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <vector>
#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <memory>
#include "ait_pool.h"

// every chunk must run exactly once; prints the participant count and how often the caller ran
static int claims(int nthreads, int64_t chunks) {
  ait::ThreadPool pool(nthreads);
  std::vector<std::atomic<int>> runs(chunks);
  std::vector<double> out(chunks, 0.0);
  std::atomic<int> by_caller{0}, bad_who{0};
  for (int rep = 0; rep < 200; ++rep) {
    for (auto& r : runs) r.store(0);
    pool.run(chunks, [&](int64_t c, int who) {
      runs[c].fetch_add(1);
      out[c] = 2.0 * c;
      if (who == 0) by_caller.fetch_add(1);
      if (who < 0 || who >= pool.size()) bad_who.fetch_add(1);
    });
    for (int64_t c = 0; c < chunks; ++c)
      if (runs[c].load() != 1 || out[c] != 2.0 * c) return 1;
  }
  std::printf("%d %d %d\n", pool.size(), by_caller.load(), bad_who.load());
  return 0;
}

// many short jobs; prints the wall time in ms
static int jobs(int nthreads) {
  ait::ThreadPool pool(nthreads);
  std::vector<float> x(1 << 16, 1.0f);
  const double t0 = ait::seconds();
  for (int rep = 0; rep < 2000; ++rep)
    pool.run(8, [&](int64_t c, int) {
      for (size_t i = c; i < x.size(); i += 8) x[i] = x[i] * 0.999f + 0.001f;
    });
  std::printf("%.3f\n", (ait::seconds() - t0) * 1e3);
  return 0;
}

// voluntary context switches (blocking waits) of the process's threads other than this one
static long worker_waits() {
  long total = 0;
  const long self = syscall(SYS_gettid);
  DIR* dir = opendir("/proc/self/task");
  for (dirent* e = dir ? readdir(dir) : nullptr; e != nullptr; e = readdir(dir)) {
    if (e->d_name[0] == '.' || std::atol(e->d_name) == self) continue;
    char path[64], line[256];
    std::snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
    FILE* f = std::fopen(path, "r");
    while (f != nullptr && std::fgets(line, sizeof(line), f) != nullptr)
      if (std::strncmp(line, "voluntary_ctxt_switches:", 24) == 0) total += std::atol(line + 24);
    if (f != nullptr) std::fclose(f);
  }
  if (dir != nullptr) closedir(dir);
  return total;
}

// Jobs with gaps between them, inside a Running guard (100 jobs, the caller busy for 300 us
// after each: a run's serial stretch) or not (10 jobs, the caller sleeping `idle_us` after
// each: runs of a model called now and then); prints how often the worker blocked
static int gaps(bool running, long idle_us) {
  ait::ThreadPool pool(2);
  std::unique_ptr<ait::ThreadPool::Running> guard;
  if (running) guard.reset(new ait::ThreadPool::Running(pool));
  std::vector<float> x(1 << 14, 1.0f);
  auto job = [&](int64_t c, int) {
    for (size_t i = c; i < x.size(); i += 2) x[i] = x[i] * 0.999f + 0.001f;
  };
  pool.run(2, job);
  const long before = worker_waits();
  for (int rep = 0; rep < (running ? 100 : 10); ++rep) {
    pool.run(2, job);
    if (running) {
      for (const double t0 = ait::seconds(); ait::seconds() - t0 < 300e-6;) {}
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
    }
  }
  std::printf("%ld\n", worker_waits() - before);
  return 0;
}

// 200 jobs of 4 chunks on 2 participants inside a Running guard (the worker spins between
// them); prints how often chunks 0 and 1, the caller's own, ran on the caller
static int owners() {
  ait::ThreadPool pool(2);
  ait::ThreadPool::Running guard(pool);
  std::vector<float> x(1 << 19, 1.0f);  // about 50 us a chunk: the worker is in before chunk 0 ends
  int who_of[4] = {0, 0, 0, 0}, first_on_caller = 0, second_on_caller = 0;
  for (int rep = 0; rep < 200; ++rep) {
    pool.run(4, [&](int64_t c, int who) {
      for (size_t i = c; i < x.size(); i += 4) x[i] = x[i] * 0.999f + 0.001f;
      who_of[c] = who;
    });
    first_on_caller += who_of[0] == 0;
    second_on_caller += who_of[1] == 0;
  }
  std::printf("%d %d\n", first_on_caller, second_on_caller);
  return 0;
}

int main(int argc, char** argv) {
  if (std::strcmp(argv[1], "claims") == 0) return claims(std::atoi(argv[2]), std::atoll(argv[3]));
  if (std::strcmp(argv[1], "threads") == 0) return std::printf("%d\n", ait::default_threads()) < 0;
  if (std::strcmp(argv[1], "spin") == 0)
    return std::printf("%lld\n", static_cast<long long>(
                                     ait::spin_time(std::chrono::microseconds(2000)).count())) < 0;
  if (std::strcmp(argv[1], "jobs") == 0) return jobs(std::atoi(argv[2]));
  if (std::strcmp(argv[1], "owners") == 0) return owners();
  if (std::strcmp(argv[1], "gaps") == 0)
    return gaps(std::atoi(argv[2]) != 0, argc > 3 ? std::atol(argv[3]) : 5000);
  return 2;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("pool")
    (d / "main.cpp").write_text(PROGRAM)
    target = find_target("cpu")
    exe = str(d / "pool_test")
    subprocess.run([target.cxx, "-O2", "-std=c++17", "-pthread", "-I",
                    os.path.join(templates_dir(), "cpu", "include"), str(d / "main.cpp"),
                    "-o", exe], check=True)
    return exe


def run(exe, *args, env=None, cpus=None, stderr=False):
    """The program's output words (and its stderr, where asked)."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ("AIT_NUM_THREADS", "OMP_NUM_THREADS", "AIT_SPIN_US")}
    environ.update(env or {})
    pre = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    done = subprocess.run([exe, *map(str, args)], check=True, capture_output=True, text=True,
                          env=environ, preexec_fn=pre)
    return (done.stdout.split(), done.stderr) if stderr else done.stdout.split()


@pytest.mark.parametrize("nthreads", [1, 2, 3, 4])
@pytest.mark.parametrize("chunks", [1, 2, 7, 64])
def test_every_chunk_runs_once(program, nthreads, chunks):
    size, by_caller, bad_who = map(int, run(program, "claims", nthreads, chunks))
    assert size == nthreads and bad_who == 0
    assert by_caller > 0  # the caller takes chunks too (with one chunk or one thread, all of them)
    if nthreads == 1 or chunks == 1:
        assert by_caller == 200 * chunks


def test_participants_run_their_own_chunks_first(program):
    """A job of few chunks gives each participant its own run of them (the caller the first
    ones, the last worker the last), the same in every job, so that consecutive kernels that
    split their rows alike find their inputs in the core that wrote them; another's chunks are
    taken only once a participant's own are done, last ones first. With 4 chunks on 2
    participants the caller's are 0 and 1: a worker claiming in order took chunk 1 while the
    caller ran chunk 0 (and a busy machine that leaves the worker unscheduled only gives the
    caller more of them)."""
    first_on_caller, second_on_caller = map(int, run(program, "owners"))
    assert first_on_caller >= 180 and second_on_caller >= 180, (first_on_caller, second_on_caller)


def test_thread_count_from_the_environment(program):
    assert run(program, "threads", env={"AIT_NUM_THREADS": "3"}) == ["3"]
    assert run(program, "threads", env={"OMP_NUM_THREADS": "2,1"}) == ["2"]
    assert run(program, "threads", env={"AIT_NUM_THREADS": "5", "OMP_NUM_THREADS": "2"}) == ["5"]
    assert run(program, "threads", cpus={min(os.sched_getaffinity(0))}) == ["1"]


@pytest.mark.parametrize("value", ["abc", "0", "-2", "3abc", " "])
def test_a_setting_that_is_no_number_is_said_and_ignored(program, value):
    """AIT_NUM_THREADS=3abc ran 3 threads and abc/0/-2 all the cores, AIT_SPIN_US=abc spun 0 us,
    silently: such a value is now named on stderr and the next source of the setting taken."""
    one = {min(os.sched_getaffinity(0))}
    words, err = run(program, "threads", env={"AIT_NUM_THREADS": value, "OMP_NUM_THREADS": "2"},
                     stderr=True)
    assert words == ["2"] and f"ignoring AIT_NUM_THREADS='{value}'" in err
    words, err = run(program, "threads", env={"OMP_NUM_THREADS": value}, cpus=one, stderr=True)
    assert words == ["1"] and f"ignoring OMP_NUM_THREADS='{value}'" in err
    words, err = run(program, "spin", env={"AIT_SPIN_US": value}, stderr=True)
    assert words == (["0"] if value == "0" else ["2000"])
    assert ("ignoring AIT_SPIN_US" in err) == (value != "0")


def test_settings_that_are_numbers_are_read_quietly(program):
    assert run(program, "spin", env={"AIT_SPIN_US": "50"}, stderr=True) == (["50"], "")
    assert run(program, "threads", env={"AIT_NUM_THREADS": "4"}, stderr=True) == (["4"], "")
    assert run(program, "threads", env={"OMP_NUM_THREADS": "3,1"}, stderr=True) == (["3"], "")
    words, err = run(program, "threads", env={"AIT_NUM_THREADS": "3,1", "OMP_NUM_THREADS": "2"},
                     stderr=True)  # a list is OpenMP's form only
    assert words == ["2"] and "ignoring AIT_NUM_THREADS='3,1'" in err


def test_more_threads_than_cores_do_not_stall_the_caller(program):
    """Four participants on one core: the workers are mostly descheduled, as on a busy machine.
    Jobs complete when their chunks are done, so the caller does them alone at about the speed
    of a one-thread pool, instead of waiting a time slice for each worker (a barrier would)."""
    one_core = {min(os.sched_getaffinity(0))}
    alone = min(float(run(program, "jobs", 1, cpus=one_core)[0]) for _ in range(3))
    crowded = min(float(run(program, "jobs", 4, cpus=one_core)[0]) for _ in range(3))
    assert crowded < 4 * alone + 50, (alone, crowded)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_workers_stay_awake_through_a_run(program):
    """Between two jobs of a run the caller may work alone for longer than the workers' spin; a
    worker that slept then would wake late (on a VM tens of microseconds or more). Inside a
    Running guard the worker does not block at all (100 gaps of 300 us); without one, between
    runs, it sleeps (in most of 10 gaps of 5 ms), so that an idle model does not keep a core.
    On a loaded machine the caller may run a job's chunks alone while the worker waits for a
    core, and the worker, still asleep, then does not block again: 4 of 10 in a full parallel
    run, so the test asks for 3 (a worker that never slept would give 0)."""
    assert int(run(program, "gaps", 1)[0]) <= 2
    assert int(run(program, "gaps", 0)[0]) >= 3


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_workers_spin_between_close_runs(program):
    """After a run the workers spin 2 ms before they sleep: through the 0.2 ms gaps of a
    caller's loop they stay awake (a gap stretched past 2 ms on a busy machine may let one
    sleep), through 20 ms gaps they sleep, unless AIT_SPIN_US asks for 50 ms of spin. (Whether
    AIT_SPIN_US=0 sleeps in the short gaps depends on the worker being scheduled in them, which
    a busy machine does not promise.)"""
    assert int(run(program, "gaps", 0, 200)[0]) <= 3
    assert int(run(program, "gaps", 0, 20000)[0]) >= 5
    assert int(run(program, "gaps", 0, 20000, env={"AIT_SPIN_US": "50000"})[0]) <= 3
