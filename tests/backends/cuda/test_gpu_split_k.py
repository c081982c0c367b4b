"""Serial split-K convs on the GPU (configs.SM80_SPLIT_K, cuda/conv2d_sm80.cu.j2): the split_k op
group built for copies of h200 and a100 whose profile names a split-K configuration for each
conv at batch 1 and another at batch 3 (which batch 8, beyond the largest measured extent, runs
too), run at the three batches and compared with the reference executor. Each case runs four times (eagerly,
then captured into a CUDA graph and replayed) and every run's outputs must be equal to the
first's: a slice that left its tile's lock word nonzero would make the next run's slices wait
forever or add their sums in another order. On h200 the kernels launch as programmatic
dependents (the lock words are passed to CUTLASS's parameters), on a100 through CUTLASS's
device class (which clears them first).

Tolerance: a split output is stored in float16 after each slice but the last (the next slice
adds its partial sum to it), so it is rounded up to 8 times instead of once; 8 u (u = 2^-11)
= 3.9e-3 relative L2 bounds that, where a slice's part of the reduction missing or added twice
gives errors of order 1e-1.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from ait_build.ops.reference import random_inputs, run_reference
from ait_build.pipeline import build_plan, find_target
from ait_build.spec.model import load_model

from cuda_helpers import TARGETS, compile_and_link, errors, on_gpu, report, unity_build
from cuda_op_groups import op_spec
from test_tuning import entry, target_with_profile

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

BOUND = 8 * 2.0 ** -11
# per conv of the group (in graph order): the configuration named at batch 1 and at batch 3
CHOICES = [("sm80_64x64x32_w32x32x32_s4_k8", "sm80_64x64x32_w32x32x32_s4_k2"),
           ("sm80_64x64x32_w32x32x32_s4_k4", "sm80_64x64x32_w32x32x32_s4_k8"),
           ("sm80_64x64x32_w32x32x32_s4_k2", "sm80_64x64x32_w32x32x32_s4_k4")]


def split_k_target(name: str, root) -> str:
    """A copy of targets/<name>.yaml under `root` whose profile names CHOICES."""
    from ait_build.codegen.tuning import tunables
    spec = op_spec("split_k")
    calls = [c.tunable for _, c in tunables(build_plan(spec, find_target(name), tune=False))]
    assert len(calls) == len(CHOICES)
    entries = [entry((t.family, t.problem_text), extent, config)
               for t, configs in zip(calls, CHOICES) for extent, config in zip((1, 3), configs)]
    return target_with_profile(root, entries, name)


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    built, jobs = {}, []
    for target in TARGETS:
        root = tmp_path_factory.mktemp(f"split_k_{target}")
        out = str(root / "out")
        emission, compile_cmd, link_cmd = unity_build(op_spec("split_k"),
                                                      split_k_target(target, root), out)
        source = "".join(open(os.path.join(out, s)).read() for s in emission.compiled_sources)
        assert source.count("kCrossCorrelation, 8)") >= 1  # the parts hold the split counts
        built[target] = out
        jobs.append((f"split_k for {target}", compile_cmd, link_cmd))
    compile_and_link(jobs, len(jobs))
    return built


@pytest.mark.parametrize("batch", [1, 3, 8])
@pytest.mark.parametrize("target", TARGETS)
def test_split_k_convs_match_the_reference_and_repeat(libraries, target, batch):
    from ait_build.runtime import Model
    graph = load_model(op_spec("split_k"))
    inputs = random_inputs(graph, {"batch": batch}, seed=batch)
    expected = run_reference(graph, inputs)
    with Model(libraries[target]) as model:
        runs = []
        for _ in range(4):
            got = model.run(on_gpu(inputs))
            torch.cuda.synchronize()
            runs.append({k: v.float().cpu().numpy() for k, v in got.items()})
    for name, want in expected.items():
        e = errors(runs[0][name], want)
        report(case=f"{target}/split_k/batch{batch}", output=name, dtype="float16", **e)
        assert e["rel_l2"] < BOUND, (target, batch, name, e)
        for again in runs[1:]:
            np.testing.assert_array_equal(again[name], runs[0][name], err_msg=name)
