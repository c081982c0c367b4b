"""The GPU layer's bandwidth kernels run on the host (host_emulation/: g++, one std::thread per
GPU thread) where no GPU is present: the depthwise convs (every window, stride, dilation, vector
width and epilogue of the `depthwise` op group), the global average pools and squeeze-excitation's
channel scale (`pools_and_scales`), the fused concat + batch norm + activation kernels
(`concat_norms`), the tiled transposes (`layout_swaps`), the fused chains of data movement
(`movement_chains`: strided and padded copies), in float16, bfloat16 and float32, against the
reference executor with the GPU tests' single-op tolerances, and in float16 once more on tensors that start
one element past an aligned address (the single-element fallbacks). What it catches: indexing,
bounds, tiles that overrun the image, vector widths that do not divide the channels, unaligned
pointers; not what only a GPU shows (speed, races between blocks, the compiler's device code).
About 5 minutes on 2 cores."""

from __future__ import annotations

import numpy as np
import pytest

from ait_build.ops.reference import random_inputs, run_reference
from ait_build.pipeline import emit, find_target
from ait_build.spec.model import load_model
from cuda_helpers import op_tolerance
from cuda_op_groups import op_spec
from host_emulation.emulated import HostModel, build, cuda_include

pytestmark = pytest.mark.nvcc

CASES = [("depthwise", "float16"), ("depthwise", "bfloat16"), ("depthwise", "float32"),
         ("pools_and_scales", "float16"), ("pools_and_scales", "bfloat16"),
         ("concat_norms", "float16"), ("concat_norms", "float32"), ("layout_swaps", "float16"),
         ("movement_chains", "float16")]


@pytest.mark.parametrize("group,dtype", CASES)
def test_own_kernels_match_reference_on_the_host(group, dtype, tmp_path):
    if cuda_include() is None:
        pytest.skip("no CUDA headers (CUDA_HOME/include/cuda_runtime.h)")
    spec = op_spec(group, dtype)
    graph = load_model(spec)
    out = str(tmp_path / graph.name)
    emission = emit(spec, find_target("h200"), out)
    assert not any("sm80" in s or "sm90" in s for s in emission.compiled_sources)  # no CUTLASS
    model = HostModel(out, build(out, graph.name))
    # batch 2 on tensors one element past an aligned address: the single-element fallbacks
    for batch, shifted in ((1, False), (3, False), (2, dtype == "float16")):
        inputs = random_inputs(graph, {"batch": batch}, seed=batch)
        ref = run_reference(graph, inputs)
        got = model.run(inputs, {"batch": batch}, {k: v.shape for k, v in ref.items()}, shifted)
        for name, expected in ref.items():
            actual = got[name].astype(np.float32)
            scale = float(np.abs(expected).max())
            np.testing.assert_allclose(actual, expected, **op_tolerance(dtype, scale),
                                       err_msg=f"{group}/{dtype}/batch{batch}: {name}"
                                       + (" (unaligned)" if shifted else ""))

