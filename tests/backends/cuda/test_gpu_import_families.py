"""Issue 32's kitchen-sink model (tests/importers/families.py: ceil_mode pools, resizes, rotary
and bucket math, repeat, vector norms, weight-normed conv1d, group norm, conv3d, a transposed
conv, einsum, per-element gather, LSTM and GRU, folded parameter subgraphs) imported from
PyTorch, built for h200 and a100 and compared with the float32 PyTorch module on the GPU:
float32 within 1e-4 of the largest output (3xTF32 GEMMs), float16 within the
seed models' relative L2 bound of 1e-2. The single new ops are in cuda_op_groups'
import_families group (test_gpu_numerics)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from cuda_helpers import ROOT, TARGETS, built, errors, on_gpu, report

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

FACTORY = "tests.importers.families:kitchen_sink"


@pytest.fixture(scope="module")
def sink_specs():
    """build/specs/import_sink_<dtype>.yaml, imported from PyTorch once per session."""
    from ait_build.importers.from_torch import import_torch
    from ait_build.importers.options import dims_for, parse_dim, parse_input
    from ait_build.importers.simplify import simplify
    from ait_build.importers.write import write_spec
    sys.path.insert(0, ROOT)
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        specs = {}
        for dtype in ("float32", "float16"):
            inputs = [parse_input("x:batch,3,12,12")]
            graph = import_torch(FACTORY, None, inputs,
                                 dims_for(inputs, [parse_dim("batch=1:4:1")]),
                                 f"import_sink_{dtype}", dtype)
            simplify(graph)
            path = os.path.join(ROOT, "build", "specs", f"import_sink_{dtype}.yaml")
            specs[dtype] = write_spec(graph, path, "issue 32's kitchen sink")[0]
        return specs
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_kitchen_sink_matches_torch(sink_specs, target, dtype):
    from tests.importers.families import kitchen_sink
    x = np.random.default_rng(32).standard_normal((3, 3, 12, 12)).astype(np.float32)
    with torch.no_grad():
        want = kitchen_sink()(torch.from_numpy(x)).numpy()
    model, graph = built(sink_specs[dtype], target)
    feed = {"x": x.astype(np.float16) if dtype == "float16" else x}
    got = model.run(on_gpu(feed))[graph.outputs[0]].float().cpu().numpy()
    e = errors(got, want)
    report(case=f"import_sink {dtype} {target}", output=graph.outputs[0], dtype=dtype, **e)
    if dtype == "float32":
        assert e["max_rel_to_scale"] < 1e-4, e
    else:
        assert e["rel_l2"] < 1e-2, e
