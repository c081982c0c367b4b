"""The importers' compositions on a GPU: the activations, rounding, statistics, masks,
rearrangements, integer division, several-tensor indexing, grid sampling, attention over
other ranks, a conv added to its own input, sorting, scatters, embedding bags and sizes only the
run knows (tests/importers/families.py, checked on cpu by tests/importers) imported in
float32, built for h200 and compared with the PyTorch module: floats within 1e-5 of the largest
output (the h200 float32 GEMMs run as 3xTF32), integers exactly."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from cuda_helpers import ROOT, built, errors, on_gpu, report

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)


def _image(*shape):
    return lambda rng: {"x": (rng.standard_normal(shape) * 2).astype(np.float32)}


CASES = {  # name -> (--input texts, the feed at batch 3)
    "activations": (["x:batch,8,6,4"], _image(3, 8, 6, 4)),
    "rearrangements": (["x:batch,8,6,4"], _image(3, 8, 6, 4)),
    "sdpa_ranks": (["x:batch,3,6,16"], _image(3, 3, 6, 16)),
    "integer_division": (["ids:batch,9:int64", "x:batch,9"], lambda rng: {
        "ids": rng.integers(-60, 60, (3, 9)).astype(np.int64),
        "x": (rng.standard_normal((3, 9)) * 3).astype(np.float32)}),
    "grid_samples": (["x:batch,4,6,5", "grid:batch,3,7,2"], lambda rng: {
        "x": rng.standard_normal((3, 4, 6, 5)).astype(np.float32),
        "grid": rng.uniform(-1.3, 1.3, (3, 3, 7, 2)).astype(np.float32)}),
    "advanced_indexing": (["x:batch,6,5,4", "ids:batch,3:int64"], lambda rng: {
        "x": rng.standard_normal((3, 6, 5, 4)).astype(np.float32),
        "ids": rng.integers(-5, 5, (3, 3)).astype(np.int64)}),
    # y + bn(depthwise(y)): the conv's residual is also its data input (plan_memory keeps the
    # output off it; on cpu it gave relative error 1.6 before)
    "depthwise_own_residual": (["x:batch,16,14,14"], _image(3, 16, 14, 14)),
    "ordering": (["x:batch,6,10"], _image(3, 6, 10)),
    "scatters": (["x:batch,6,5", "ids:batch,3:int64"], lambda rng: {
        "x": (rng.standard_normal((3, 6, 5)) * 2).astype(np.float32),
        "ids": rng.integers(0, 5, (3, 3)).astype(np.int64)}),
    "bags": (["ids:batch,5:int64", "weights:batch,5"], lambda rng: {
        "ids": rng.integers(0, 20, (3, 5)).astype(np.int64),
        "weights": rng.standard_normal((3, 5)).astype(np.float32)}),
    "run_time_counts": (["x:batch,seq,4", "mask:batch,seq:int64"], lambda rng: {
        "x": rng.standard_normal((3, 7, 4)).astype(np.float32),
        "mask": rng.integers(0, 3, (3, 7)).astype(np.int64)}, ["seq=2:16:8"]),
}


def _spec(name: str) -> str:
    from ait_build.importers.from_torch import import_torch
    from ait_build.importers.options import dims_for, parse_dim, parse_input
    from ait_build.importers.simplify import simplify
    from ait_build.importers.write import write_spec
    sys.path.insert(0, ROOT)
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        inputs = [parse_input(t) for t in CASES[name][0]]
        dims = ["batch=1:4:2"] + (CASES[name][2] if len(CASES[name]) > 2 else [])
        graph = import_torch(f"tests.importers.families:{name}", None, inputs,
                             dims_for(inputs, [parse_dim(d) for d in dims]), f"import_{name}")
        simplify(graph)
        path = os.path.join(ROOT, "build", "specs", f"import_{name}.yaml")
        return write_spec(graph, path, f"tests.importers.families:{name}")[0]
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("name", sorted(CASES))
def test_import_forms_match_torch_on_the_gpu(name):
    from tests.importers import families
    feed = CASES[name][1](np.random.default_rng(5))
    with torch.no_grad():
        want = getattr(families, name)()(*(torch.from_numpy(v) for v in feed.values()))
    want = [w.numpy() for w in (want if isinstance(want, (tuple, list)) else [want])]
    model, graph = built(_spec(name), "h200")
    got = model.run(on_gpu(feed))
    for out, expected in zip(graph.outputs, want):
        actual = got[out].cpu().numpy()
        if expected.dtype.kind in "iub":
            np.testing.assert_array_equal(actual, expected, err_msg=f"{name}: {out}")
            continue
        e = errors(actual.astype(np.float32), expected)
        report(case=f"import_{name} h200", output=out, dtype="float32", **e)
        assert e["max_rel_to_scale"] < 1e-5, (name, out, e)
