"""The seed models against PyTorch on the GPU: ResNet-50, ViT-B/16 and the BERT-base encoder (at
seq 128 and at seq 4096), built with SCons for h200 and a100, each at batch 1 and at its max
batch, run in float16 through ait_build.runtime.Model and compared with the spec's PyTorch twin
(ait_build/bench/models.py: torchvision's resnet50 and vit_b_16, transformers' BertModel encoder)
holding the same random weights (the spec's seeded init, copied by name), run in float32 on the
same GPU.

The reference. float32 PyTorch with the spec's float32 weights computes the function the spec
describes: on these models and weights it agrees with the NumPy reference executor (which
test_gpu_numerics compares with) to about 1e-6 relative, far below the float16 errors measured
here; unlike the executor it reaches the max batch in a fraction of a second. TF32 is turned off
while it runs: PyTorch's cuDNN convolutions default to TF32 (10 mantissa bits, float16's), which
would make ResNet-50's reference no more accurate than what it checks. PyTorch's own float16 run
of the twin (`.half()`, as `ait-build bench` times it) is measured against the same reference
and reported beside ours, for scale; it is not asserted.

Sizes. Batch 1 and the spec's `batch.max` (256 for the three models; read from the spec). BERT at
seq 4096 runs at batch 8, not 256: the spec's dims are independent ranges, and 256 x 4096 is a
million tokens (6.4 GB for each float16 FFN activation of ours, some 40 GB and 350 TFLOP of
float32 for the reference, 800M output values to compare on the host), where 8 x 4096 has the
same 32768 tokens as the max batch at seq 128 (256 x 128) and is the long-sequence anchor case of
docs/cuda.md. What the long sequence changes is the attention kernels' key loop (4096 keys); a
larger batch only widens their grid, which the max batch at seq 128 already does.

Tolerances, for every output: relative L2 error under 1e-2 and the largest error under 2e-2 of
the output's largest magnitude. These are test_gpu_numerics' seed-model bounds: float16 rounds
each activation once per op (u = 2^-11 = 4.9e-4), and 12 transformer blocks or 53 convs with
normalizations between them accumulate that to measured relative L2 errors of 5e-4 to 1.3e-3 at
batch 1 (largest error 6.6e-4 to 1.2e-3 of the output's scale; bench's float16 PyTorch twin
differed from ours by at most 0.016 on outputs up to 12.9 at the large batches). A larger batch
repeats the same computation per sample, so each element's error has the same distribution:
relative L2 does not grow with the batch. The largest error over N elements grows like the tail
of that distribution, but so does the largest output (both are close to Gaussian), so their ratio
stays near the relative L2; 2e-2 leaves an order of magnitude for heavier tails. Every measured
error goes to AIT_GPU_REPORT (`reference: torch_float32`), PyTorch's float16 ones as case
`torch_float16/...`.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from ait_build.ops.reference import random_inputs

from cuda_helpers import TARGETS, built, errors, on_gpu, report, spec_path

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("transformers")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

# case -> (spec, dims besides the batch, batch of the "max" size: None is the spec's batch.max)
LONG_SEQ_BATCH = 8  # BERT at seq 4096: 32768 tokens, as 256 x 128 (see the module docstring)
CASES = {
    "resnet50": ("resnet50", {}, None),
    "vit_b16": ("vit_b16", {}, None),
    "bert_base_seq128": ("bert_base", {"seq": 128}, None),
    "bert_base_seq4096": ("bert_base", {"seq": 4096}, LONG_SEQ_BATCH),
}
SIZES = ["batch1", "max_batch"]
SEED = 7
REL_L2, MAX_REL = 1e-2, 2e-2

_TWINS: dict = {}  # spec name -> (Twin, float32 module on the GPU, float16 module on the GPU)
_TORCH: dict = {}  # (spec name, dims) -> (inputs, float32 outputs as NumPy arrays)


@contextlib.contextmanager
def float32_math():
    """Full float32 GEMMs and convolutions in PyTorch (no TF32), restored afterwards."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def twins(name: str, graph):
    """The twin of `name` with the spec's weights, in float32 and (a second copy: converting the
    first would round its weights) in float16, both on the GPU."""
    from ait_build.bench.models import torch_twin
    if name not in _TWINS:
        twin = torch_twin(graph, name)
        half = torch_twin(graph, name).module.half().cuda()
        _TWINS[name] = (twin, twin.module.cuda(), half)
    return _TWINS[name]


def torch_reference(name: str, graph, dims: dict) -> tuple:
    """(inputs, float32 PyTorch outputs) at `dims`, computed once for both targets; PyTorch's
    float16 errors against them are reported then."""
    key = (name, tuple(sorted(dims.items())))
    if key not in _TORCH:
        inputs = random_inputs(graph, dims, seed=SEED)
        twin, fp32, fp16 = twins(name, graph)
        args = [a.cuda() for a in twin.to_args(inputs)]
        with torch.inference_mode():
            with float32_math():
                want = {k: v.float().cpu().numpy() for k, v in zip(twin.outputs, fp32(*args))}
            half_args = [a.half() if a.is_floating_point() else a for a in args]
            half = dict(zip(twin.outputs, fp16(*half_args)))
        for out, expected in want.items():
            actual = half[out].float().cpu().numpy()
            report(case=f"torch_float16/{name}/{_dims_text(dims)}", output=out, dtype="float16",
                   reference="torch_float32", finite=bool(np.isfinite(actual).all()),
                   **errors(actual, expected))
        del args, half_args, half
        _TORCH.clear()  # one case at a time on the host: the next test is another case's
        _TORCH[key] = (inputs, want)
    return _TORCH[key]


def _dims_text(dims: dict) -> str:
    return "x".join(f"{k}{v}" for k, v in sorted(dims.items()))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("case", list(CASES))
def test_seed_model_matches_torch_float32(case, size, target):
    name, extra, max_batch = CASES[case]
    model, graph = built(spec_path(name), target)
    batch = 1 if size == "batch1" else (max_batch or graph.dims["batch"].max)
    dims = {"batch": batch, **extra}
    inputs, want = torch_reference(name, graph, dims)
    got = model.run(on_gpu(inputs))
    torch.cuda.synchronize()
    assert set(got) == set(want), (sorted(got), sorted(want))
    for out, expected in want.items():
        actual = got[out].float().cpu().numpy()
        assert actual.shape == expected.shape, (out, actual.shape, expected.shape)
        assert np.isfinite(expected).all() and np.abs(expected).max() > 0, f"{out}: reference"
        assert np.isfinite(actual).all(), f"{target}/{case}/{size}: {out} has non-finite values"
        e = errors(actual, expected)
        report(case=f"{target}/{name}/{_dims_text(dims)}", output=out,
               dtype=graph.tensors[out].dtype, reference="torch_float32", **e)
        assert e["rel_l2"] < REL_L2 and e["max_rel_to_scale"] < MAX_REL, (out, dims, e)
