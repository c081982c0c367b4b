"""float16 accumulation on the GPU (targets with `precision: {accumulate: float16}`, docs/cuda.md):
the gemm_large and conv_large op groups built for a copy of h200 and of a100 with the option
(cuda_helpers.fp16acc_target), one translation unit each, run at batch 1 (the sm80 kernels) and
5 (on h200 the sm90 GEMM) and compared with the reference executor (float32 math).

Tolerance. A float16 accumulator rounds every partial sum (unit roundoff u = 2^-11), so a dot
product of K terms carries an error of about sqrt(K) u times the size of its terms for random
data (K u at worst); the float32 epilogue then adds one more rounding. The bound is
4 sqrt(K) u in relative L2 with K the group's longest reduction (64 for gemm_large, 3*3*64 = 576
for conv_large): 1.6e-2 and 4.7e-2, where a wrong kernel gives errors of order 1. Every measured
error goes to AIT_GPU_REPORT next to the float32-accumulating builds' (test_gpu_numerics), so the
price of the option can be read off. Building takes a minute or two on the GPU machine (four
translation units, one compiler each, the h200 ones holding sm90 GEMMs).
"""

from __future__ import annotations

import math
import os

import pytest

from ait_build.ops.reference import random_inputs, run_reference
from ait_build.spec.model import load_model

from cuda_helpers import (TARGETS, compile_and_link, errors, fp16acc_target, on_gpu, report,
                          unity_build)
from cuda_op_groups import op_spec

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

U = 2.0 ** -11
# the longest reduction of each group: linear over 64 features; a 3x3 conv over 64 channels
LONGEST_K = {"gemm_large": 64, "conv_large": 3 * 3 * 64}


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    built, jobs = {}, []
    for group in LONGEST_K:
        for target in TARGETS:
            root = tmp_path_factory.mktemp(f"{group}_{target}_fp16acc")
            out = str(root / "out")
            spec = op_spec(group)
            _, compile_cmd, link_cmd = unity_build(spec, fp16acc_target(target, str(root)), out)
            built[(group, target)] = (out, spec)
            jobs.append((f"{group} for {target}_fp16acc", compile_cmd, link_cmd))
    compile_and_link(jobs, len(jobs))
    return built


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("group", sorted(LONGEST_K))
def test_float16_accumulation_stays_within_its_rounding(libraries, group, target):
    from ait_build.runtime import Model
    out, spec = libraries[(group, target)]
    assert os.path.exists(os.path.join(out, "manifest.json"))
    graph = load_model(spec)
    bound = 4 * math.sqrt(LONGEST_K[group]) * U
    with Model(out) as model:
        for batch in (1, 5):
            inputs = random_inputs(graph, {"batch": batch}, seed=batch)
            got = model.run(on_gpu(inputs))
            torch.cuda.synchronize()
            for name, expected in run_reference(graph, inputs).items():
                e = errors(got[name].float().cpu().numpy(), expected)
                report(case=f"{target}_fp16acc/{group}/batch{batch}", output=name,
                       dtype="float16", **e)
                assert e["rel_l2"] < bound, (group, target, batch, name, e)
