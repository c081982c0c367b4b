"""The cuda backend on a GPU: every op (op_groups.py), the small zoo specs and the seed models,
built with SCons for h200 (sm_90a) and a100 (compute_80 PTX, JIT-compiled on Hopper), run through
ait_build.runtime.Model on torch CUDA tensors and compared with the reference executor.

Tolerances. The reference computes each op in float32 from the same float16 inputs and weights.
A float16 op here computes in float32 and rounds its output once (unit roundoff u = 2^-11 =
4.9e-4); a graph built as written rounds every intermediate tensor too. So single ops get
|got - ref| <= 4e-3 |ref| + 1e-3 max|ref| (a few roundings, plus float32 summation order in
GEMMs relative to the output's scale). Whole float16 models accumulate one rounding per layer
(ResNet-50: 53 convs, BERT/ViT: 12 blocks of 7 ops) through normalizations that amplify it: on
the H200 the seed models measured relative L2 errors of 0.5e-3 to 1.3e-3 and the float16 small
specs under 0.8e-3 (docs/cuda.md), so they are held to 1e-2 and 5e-3; every measured error is
written out (AIT_GPU_REPORT). float32 specs run their GEMMs as 3xTF32 (float32-level
accuracy), so they keep the cpu tests' float32 tolerance (rtol 1e-4 after scaling).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ait_build.ops.reference import random_inputs, run_reference

from cuda_helpers import (TARGETS, built, check_whole_model, errors, fp16_spec, on_gpu,
                          op_tolerance, report, spec_path)
from cuda_op_groups import FP16_SMALL, GROUPS, SEEDS, SMALL, op_spec

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)


def check_outputs(got: dict, ref: dict, graph, single_op: bool, what: str) -> None:
    for name, expected in ref.items():
        dtype = graph.tensors[name].dtype
        actual = got[name].float().cpu().numpy() if dtype != "bool" else got[name].cpu().numpy()
        if dtype == "bool":
            np.testing.assert_array_equal(actual, expected, err_msg=f"{what}: {name}")
            continue
        if dtype in ("int32", "int64"):
            np.testing.assert_array_equal(actual, expected, err_msg=f"{what}: {name}")
            continue
        assert np.isfinite(actual).all(), f"{what}: {name} has non-finite values"
        e = errors(actual, expected)
        report(case=what, output=name, dtype=dtype, **e)
        scale = float(np.abs(expected).max()) if expected.size else 0.0
        np.testing.assert_allclose(actual, expected, **op_tolerance(dtype, scale, single_op),
                                   err_msg=f"{what}: {name}")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("group", sorted(GROUPS))
def test_op_matches_reference(group, target):
    model, graph = built(op_spec(group), target)
    for batch in (1, 5):
        inputs = random_inputs(graph, {"batch": batch}, seed=batch)
        if "at" in inputs:  # gather may index from the end
            inputs["at"] = np.array([-1, 3, -5], np.int32)
        ref = run_reference(graph, inputs)
        got = model.run(on_gpu(inputs))
        torch.cuda.synchronize()
        check_outputs(got, ref, graph, True, f"{target}/{group}/batch{batch}")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", SMALL)
def test_small_specs_float32(name, target):
    model, graph = built(spec_path(name), target)
    inputs = random_inputs(graph, {d: r.opt for d, r in graph.dims.items()}, seed=1)
    got = model.run(on_gpu(inputs))
    check_outputs(got, run_reference(graph, inputs), graph, False, f"{target}/{name}")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", FP16_SMALL)
def test_small_specs_float16(name, target):
    check_whole_model(fp16_spec(name), target, None, 2, 5e-3, f"{target}/{name}_float16")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seed_model_matches_reference(name, target):
    check_whole_model(spec_path(name), target, SEEDS[name], 3, 1e-2, f"{target}/{name}")


def test_concurrent_streams_share_one_model():
    """Two threads, each on its own stream, run one model at once (a workspace each)."""
    model, graph = built(fp16_spec("tiny_vit"), "h200")
    inputs = [on_gpu(random_inputs(graph, {"batch": 4}, seed=s)) for s in (5, 6)]
    expected = [{k: v.clone() for k, v in model.run(x).items()} for x in inputs]
    torch.cuda.synchronize()
    results: dict = {}

    def work(i):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for _ in range(20):
                out = model.run(inputs[i])
            stream.synchronize()
            results[i] = out

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        for k, v in expected[i].items():
            assert torch.equal(results[i][k], v), k


def test_graph_replays_read_new_inputs():
    """Repeating a call (same dims and buffers) switches to a captured CUDA graph; each replay
    must compute from the values the buffers hold now, and other dims must not replay it."""
    model, graph = built(fp16_spec("tiny_vit"), "h200")
    for batch in (2, 3, 2):
        x = on_gpu(random_inputs(graph, {"batch": batch}, seed=0))
        outs = {k: torch.empty_like(v) for k, v in model.run(x).items()}
        for seed in range(4):  # eager, capture + replay, replay, replay
            fresh = random_inputs(graph, {"batch": batch}, seed=10 * batch + seed)
            for k, v in on_gpu(fresh).items():
                x[k].copy_(v)
            assert model.run(x, outputs=outs) is not None
            for out, expected in run_reference(graph, fresh).items():
                e = errors(outs[out].float().cpu().numpy(), expected)
                assert e["rel_l2"] < 5e-3, (batch, seed, out, e)


def test_alternating_shapes_replay_their_own_graphs():
    """Two batch sizes, each with its own buffers, called in turn: from the second round on both
    keys are captured and replayed from the workspace's graph cache; every call must compute
    from its own inputs at its own shape (a graph replayed for the wrong key would not)."""
    model, graph = built(fp16_spec("tiny_vit"), "h200")
    bufs = {}
    for batch in (2, 3):
        x = on_gpu(random_inputs(graph, {"batch": batch}, seed=0))
        bufs[batch] = (x, {k: torch.empty_like(v) for k, v in model.run(x).items()})
    for round_ in range(4):
        for batch, (x, outs) in bufs.items():
            fresh = random_inputs(graph, {"batch": batch}, seed=100 * round_ + batch)
            for k, v in on_gpu(fresh).items():
                x[k].copy_(v)
            model.run(x, outputs=outs)
            for out, expected in run_reference(graph, fresh).items():
                e = errors(outs[out].float().cpu().numpy(), expected)
                assert e["rel_l2"] < 5e-3, (round_, batch, out, e)


def test_bad_calls_are_errors_not_crashes():
    from ait_build.runtime.manifest import ModelError
    model, graph = built(spec_path("mlp"), "h200")
    x = torch.randn(2, 32, device="cuda")
    with pytest.raises(ModelError, match="outside"):
        model.run({"x": torch.randn(65, 32, device="cuda")})  # batch max is 64
    with pytest.raises(ModelError, match="float16"):
        model.run({"x": x.half()})
    out = model.run({"x": x})["softmax"]
    torch.testing.assert_close(out.sum(-1), torch.ones(2, device="cuda"))
