"""The bandwidth-bound kernel families on the GPU (h200): the depthwise convs, global average
pools and squeeze-excitation channel scales of their op groups in bfloat16 (and the depthwise
convs in float32: cuda_op_groups.FAMILY_VARIANTS) against the reference executor with
test_gpu_numerics' single-op tolerances (8x for bfloat16: op_tolerance); their float16 groups,
whole squeeze-excitation blocks and the new epilogue activations (relu6, hardsigmoid, hardtanh)
run in test_gpu_numerics.test_op_matches_reference. Then the float16 depthwise, pool and scale
kernels on tensors that start 2 bytes past a 16-byte boundary, which must take their
single-channel paths and still match. bench/gpu_families.sh runs all of it in one call.
"""

from __future__ import annotations

import pytest

from ait_build.ops.reference import random_inputs, run_reference

from cuda_helpers import built, on_gpu
from cuda_op_groups import FAMILY_VARIANTS, op_spec

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from test_gpu_numerics import check_outputs  # noqa: E402  (imports torch)


@pytest.mark.parametrize("group,dtype", FAMILY_VARIANTS)
def test_families_in_other_dtypes(group, dtype):
    model, graph = built(op_spec(group, dtype), "h200")
    for batch in (1, 5):
        inputs = random_inputs(graph, {"batch": batch}, seed=batch)
        got = model.run(on_gpu(inputs))
        torch.cuda.synchronize()
        check_outputs(got, run_reference(graph, inputs), graph, True,
                      f"h200/{group}_{dtype}/batch{batch}")


def shifted(tensor):
    """A copy of `tensor` that starts one element (2 bytes) into a fresh buffer."""
    buf = torch.empty(tensor.numel() + 1, dtype=tensor.dtype, device=tensor.device)
    return buf[1:].view(tensor.shape).copy_(tensor)


@pytest.mark.parametrize("group", ["depthwise", "pools_and_scales"])
def test_unaligned_tensors_take_single_channels(group):
    model, graph = built(op_spec(group), "h200")
    inputs = random_inputs(graph, {"batch": 3}, seed=7)
    ins = {k: shifted(v) for k, v in on_gpu(inputs).items()}
    assert all(v.data_ptr() % 16 == 2 for v in ins.values())
    outs = {k: shifted(v) for k, v in model.run(on_gpu(inputs)).items()}
    model.run(ins, outputs=outs)
    torch.cuda.synchronize()
    check_outputs(outs, run_reference(graph, inputs), graph, True, f"h200/{group}/unaligned")
