"""Progress lines number each step among every step of the build, with a total that never
changes; slow steps say how long they took, and long reference runs report as they go."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace

import SCons.Node

from ait_build.build import progress as scons_progress
from ait_build.ops.reference import ProgressLine
from buildproj import MODEL


def _counts(out: str) -> list:
    """(k, n) of the lines that start a step; a slow step's report (`...: 3.1 s`) repeats its k."""
    starts = re.findall(r"^\[(\d+)/(\d+)\] (?!.*: \d+\.\d s$)", out, re.M)
    return [(int(k), int(n)) for k, n in starts]


def test_an_incremental_build_keeps_its_total_and_ends_at_it(fresh):
    fresh.edit(f"specs/{MODEL}.yaml", "out_features: 16", "out_features: 20")
    result = fresh.scons("target=cpu")
    counts = _counts(result.out)
    ran = 1 + len(result.steps("compiling")) + 1  # generation, the compiles that ran, link
    full = 1 + len(fresh.plan().compiled_sources) + 1  # generation, every compile, link
    assert ran < full, result.out  # the edit leaves most kernels alone
    assert len(counts) == ran and {n for _, n in counts} == {full}, result.out
    numbers = [k for k, _ in counts]
    assert numbers[0] == 1 and numbers[-1] == full and numbers == sorted(set(numbers)), result.out


class _Node:
    def __init__(self, state=SCons.Node.no_state):
        self.state, self.executor = state, object()

    def get_state(self):
        return self.state

    def get_executor(self):
        return self.executor


def test_steps_found_up_to_date_are_counted_not_dropped_and_slow_steps_report_time(monkeypatch):
    out = io.StringIO()
    progress = scons_progress.Progress(out)
    env = SimpleNamespace(AddPostAction=lambda node, action: None)
    nodes = [_Node() for _ in range(5)]
    for node in nodes:
        progress.add_step(env, node)
    nodes[0].state = SCons.Node.executing
    progress("generating 3 files (cpu/m)", [nodes[0]], [], None)
    nodes[0].state = SCons.Node.executed
    nodes[1].state = nodes[2].state = SCons.Node.up_to_date  # SCons reached and skipped them
    nodes[3].state = nodes[4].state = SCons.Node.executing  # two jobs start together
    progress("compiling b.cpp (cpu/m)", [nodes[3]], [], None)
    progress("linking libm.so (cpu/m)", [nodes[4]], [], None)
    monkeypatch.setattr(scons_progress, "SLOW_S", 0.0)
    progress.step_ended([nodes[4]], [], None)
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["[1/5] generating 3 files (cpu/m)", "[4/5] compiling b.cpp (cpu/m)",
                         "[5/5] linking libm.so (cpu/m)"]
    assert len(lines) == 4 and re.fullmatch(r"\[5/5\] linking libm\.so \(cpu/m\): \d+\.\d s", lines[3])


def test_fast_steps_report_no_time():
    out = io.StringIO()
    progress = scons_progress.Progress(out)
    node = _Node()
    progress.add_step(SimpleNamespace(AddPostAction=lambda n, a: None), node)
    progress("compiling a.cpp (cpu/m)", [node], [], None)
    progress.step_ended([node], [], None)
    assert out.getvalue() == "[1/1] compiling a.cpp (cpu/m)\n"


def test_reference_progress_speaks_only_for_long_runs():
    node = SimpleNamespace(name="layer1")
    quiet = io.StringIO()
    line = ProgressLine(quiet, after=60.0)
    for i in range(1, 4):
        line(i, 3, node)
    assert quiet.getvalue() == ""
    loud = io.StringIO()
    line = ProgressLine(loud, after=0.0, every=0.0)
    for i in range(1, 4):
        line(i, 3, node)
    assert loud.getvalue().splitlines()[0].startswith("reference: 1/3 nodes, ")
    assert loud.getvalue().splitlines()[0].endswith(", at layer1")
    assert loud.getvalue().splitlines()[-1].startswith("reference: 3/3 nodes")
