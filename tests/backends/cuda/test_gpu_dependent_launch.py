"""Dependent launches on the GPU (an h200 copy with capabilities.dependent_launch on, which the
stock targets leave off until this has run; docs/cuda.md): the same library run with them and
with AIT_DEPENDENT_LAUNCH=0 must give the same
outputs bit for bit, eagerly and from graph replays: the kernels and their order are the same,
so a kernel that touched memory before the previous kernel finished would show as a difference.
The groups cover our own kernels (depthwise convs, pools, SE scales, data movement, norms) and
the CUTLASS entry points (the tiny seed models: 2.x and sm90 convs and GEMMs, the fused
attention)."""

from __future__ import annotations

import os

import pytest

from ait_build.ops.reference import random_inputs
from ait_build.runtime.settings import model_with

from cuda_helpers import ROOT, bf16_spec, dependent_h200, fp16_spec, on_gpu
from cuda_op_groups import op_spec

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

SPECS = {"depthwise": lambda: op_spec("depthwise"),
         "pools_and_scales": lambda: op_spec("pools_and_scales"),
         "movement_chains": lambda: op_spec("movement_chains"),
         "tiny_vit": lambda: fp16_spec("tiny_vit"),
         "tiny_cnn": lambda: fp16_spec("tiny_cnn"),
         "tiny_bert": lambda: bf16_spec("tiny_bert")}  # fp16_spec keeps its float32 mask cast


@pytest.mark.parametrize("name", sorted(SPECS))
def test_dependent_launches_change_no_output(name):
    from ait_build.build.invoke import build
    from ait_build.spec.model import load_model
    spec = SPECS[name]()
    graph = load_model(spec)
    project = os.path.join(ROOT, "build", "dependent_project")  # its targets/: the h200 copy
    dependent_h200(project)
    cache = os.environ.get("AIT_BUILD_CACHE") or os.path.join(ROOT, "build", "cache")
    out = build(spec, "h200_dependent", cache=cache, quiet=True, root=project)
    with model_with(out, {"AIT_DEPENDENT_LAUNCH": "1"}) as dependent, \
            model_with(out, {"AIT_DEPENDENT_LAUNCH": "0"}) as plain:
        for batch in (1, 4):
            inputs = on_gpu(random_inputs(graph, {"batch": batch}, seed=batch))
            want = {k: v.clone() for k, v in plain.run(inputs).items()}
            for call in range(4):  # the third and later calls replay a captured graph
                got = dependent.run(inputs)
                torch.cuda.synchronize()
                for k, v in want.items():
                    assert torch.equal(got[k], v), f"{name} batch {batch} call {call}: {k} differs"
