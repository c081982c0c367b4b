"""The workspace placement a cpu library makes at run time (layout() in the generated model.cpp,
ait::Placer in ait_runtime.h) is the Python rule's (ait_build/ir/placement.py) for the same dims:
a program that includes the generated model.cpp calls its layout() for dims other than the
build's, one workspace for all of them as a run's lease reuses it, and prints the offsets."""

from __future__ import annotations

import os
import subprocess

from ait_build.backends import toolchain_for
from ait_build.codegen.emit import write_library
from ait_build.codegen.storage import align
from ait_build.ir.placement import place
from ait_build.pipeline import build_plan

WIDTHS = [3, 40, 17, 100, 5, 64]  # batch * width * 4 bytes: a size order that changes with batch

HARNESS = r"""#include "src/model.cpp"

#include <cstdio>
#include <cstdlib>

// prints the workspace bytes and the offsets layout() places for each set of dims given
int main(int argc, char** argv) {
  ait::Workspace w;
  std::vector<int64_t> d(kNumDims);
  for (int a = 1; a + kNumDims <= argc; a += kNumDims) {
    for (int i = 0; i < kNumDims; ++i) d[i] = std::atoll(argv[a + i]);
    layout(d.data(), w);
    std::printf("%lld", static_cast<long long>(w.bytes));
    for (int g = 0; g < kNumGroups; ++g) std::printf(" %lld", static_cast<long long>(w.offsets[g]));
    std::printf("\n");
  }
}
"""


def chain_spec(n: int) -> str:
    """n linear layers of the widths in turn; every 7th adds the output 6 to 24 layers back, so
    groups live from 1 to 25 positions."""
    lines = ["apiVersion: ait-build/v1", "kind: Model", "name: chain", "dtype: float32", "dims:",
             "  batch: {min: 1, max: 64, opt: 8}", "inputs:", "  x: {shape: [batch, 8]}",
             "weights: {random: {seed: 0}}", "graph:"]
    last = "x"
    for i in range(n):
        lines.append(f"  - {{name: l{i}, op: linear, out_features: {WIDTHS[i % len(WIDTHS)]}, "
                     f"inputs: [{last}]}}")
        last, back = f"l{i}", i - len(WIDTHS) * (1 + i % 4)
        if i % 7 == 0 and back >= 0:
            lines.append(f"  - {{name: s{i}, op: add, inputs: [l{i}, l{back}]}}")
            last = f"s{i}"
    return "\n".join(lines + [f"outputs: [{last}]"]) + "\n"


def test_run_time_placement_is_the_python_rule(tmp_path, cpu_target):
    spec = tmp_path / "chain.yaml"
    spec.write_text(chain_spec(200))
    plan = build_plan(str(spec), cpu_target)
    groups = plan.layout.groups
    assert len(groups) > 150 and len({g.end - g.start for g in groups}) >= 4
    tc = toolchain_for(cpu_target)
    out = str(tmp_path / "out")
    write_library(plan, out, tc.manifest())
    with open(os.path.join(out, "harness.cpp"), "w") as fh:
        fh.write(HARNESS)
    # the model's flags at -O0 (the placement is the same; it compiles in a third of the time);
    # the unused C API and the kernels it calls are dropped, so nothing else is linked
    program = os.path.join(out, "harness")
    compiled = subprocess.run(
        tc.compile_command(os.path.join(out, "harness.cpp"), program + ".o", include_dirs=[out])
        + ["-O0", "-ffunction-sections"], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr[-4000:]
    linked = subprocess.run([tc.cxx, "-pthread", "-Wl,--gc-sections", program + ".o", "-o",
                             program], capture_output=True, text=True)
    assert linked.returncode == 0, linked.stderr[-4000:]
    batches = [1, 7, 64, 2, 1]  # the build's placement is at 64; back and forth on one workspace
    ran = subprocess.run([program, *map(str, batches)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    placed = {}
    for batch, line in zip(batches, ran.stdout.splitlines(), strict=True):
        top, *offsets = map(int, line.split())
        sizes = [align(max(s.eval({"batch": batch}) for s in g.sizes)) for g in groups]
        assert (offsets, top) == place(sizes, [(g.start, g.end) for g in groups]), batch
        placed[batch] = offsets
    # not the max dims' placement scaled down: at batch 1 the 64-byte alignment reorders sizes
    assert [o * 64 for o in placed[1]] != placed[64]
