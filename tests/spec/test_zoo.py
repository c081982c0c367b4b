"""The model zoo: every spec loads, each model has the structure its architecture implies, and the
small specs run in the reference executor with dynamic dims. No PyTorch needed (see
test_fidelity_torch.py for the comparison with the real models)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ait_build.ir.graph import WEIGHT
from ait_build.ops.reference import random_inputs, run_reference
from ait_build.spec.model import load_model

SPECS = Path(__file__).resolve().parents[2] / "specs"
MODEL_SPECS = sorted(p.name for p in SPECS.glob("*.yaml"))
TINY = ("tiny_cnn", "tiny_bert", "tiny_vit")


def load(name):
    return load_model(str(SPECS / f"{name}.yaml"))


def weights(graph) -> dict:
    return {t.name: tuple(d.value for d in t.shape) for t in graph.tensors.values() if t.kind == WEIGHT}


@pytest.mark.parametrize("spec", MODEL_SPECS)
def test_every_spec_loads(spec):
    graph = load_model(str(SPECS / spec))
    assert graph.nodes and graph.outputs and weights(graph)


def test_zoo_is_complete():
    assert {"resnet50.yaml", "bert_base.yaml", "vit_b16.yaml"} | {f"{t}.yaml" for t in TINY} \
        <= set(MODEL_SPECS)


# op counts per model, and the weight element counts (the published parameter counts; resnet50
# adds the 2 x 26560 BatchNorm running statistics to torchvision's 25,557,032 parameters)
STRUCTURE = {
    "resnet50": ({"conv2d": 53, "batch_norm": 53, "relu": 49, "add": 16, "max_pool2d": 1,
                  "global_avg_pool": 1, "linear": 1}, 267, 25_557_032 + 2 * 26_560),
    "bert_base": ({"linear": 72, "matmul": 24, "softmax": 12, "div": 12, "reshape": 48,
                   "permute": 48, "add": 24, "layer_norm": 24, "gelu": 12, "identity": 1},
                  192, 85_054_464),
    "vit_b16": ({"conv2d": 1, "reshape": 2, "parameter": 2, "expand": 1, "concat": 1, "add": 25,
                 "layer_norm": 25, "linear": 49, "multi_head_attention": 12, "gelu": 12,
                 "slice": 1}, 152, 86_567_656),
}


@pytest.mark.parametrize("name", list(STRUCTURE))
def test_structure(name):
    graph = load(name)
    ops, n_weights, n_elements = STRUCTURE[name]
    assert Counter(n.op for n in graph.nodes) == ops
    w = weights(graph)
    assert len(w) == n_weights
    assert sum(int(np.prod(s)) for s in w.values()) == n_elements


def test_bert_base_attention_is_the_eager_pattern():
    """linear -> reshape -> permute for q and k, matmul(transpose_b) / 8, softmax, @ v, merge:
    the chain the attention-fusion pass looks for."""
    graph = load("bert_base")
    producer = {t: n for n in graph.nodes for t in n.outputs}
    softmaxes = [n for n in graph.nodes if n.op == "softmax"]
    assert len(softmaxes) == 12
    for sm in softmaxes:
        assert sm.attrs["axis"] == -1
        div = producer[sm.inputs[0]]
        assert div.op == "div" and div.attrs["scalar"] == 8.0
        qk = producer[div.inputs[0]]
        assert qk.op == "matmul" and qk.attrs["transpose_b"]
        for side, role in zip(qk.inputs, ("query", "key")):
            perm = producer[side]
            split = producer[perm.inputs[0]]
            proj = producer[split.inputs[0]]
            assert perm.attrs["dims"] == (0, 2, 1, 3) and split.op == "reshape"
            assert proj.op == "linear" and proj.weights["weight"].endswith(f"self.{role}.weight")
        (pv,) = [n for n in graph.nodes if n.op == "matmul" and sm.outputs[0] in n.inputs]
        assert graph.tensors[pv.outputs[0]].shape[1].value == 12
    assert str(graph.tensors["last_hidden_state"].shape) == str(graph.tensors["hidden_states"].shape)


def test_weight_names_follow_pytorch():
    bert, vit = weights(load("bert_base")), weights(load("vit_b16"))
    assert bert["encoder.layer.0.attention.self.query.weight"] == (768, 768)
    assert bert["encoder.layer.11.output.LayerNorm.bias"] == (768,)
    assert bert["encoder.layer.5.intermediate.dense.weight"] == (3072, 768)
    assert vit["encoder.layers.encoder_layer_11.self_attention.in_proj_weight"] == (2304, 768)
    assert vit["encoder.layers.encoder_layer_0.self_attention.out_proj.bias"] == (768,)
    assert vit["class_token"] == (1, 1, 768)
    assert vit["encoder.pos_embedding"] == (1, 197, 768)
    assert vit["conv_proj.weight"] == (768, 3, 16, 16)
    tiny = weights(load("tiny_bert"))
    assert tiny["embeddings.position_embeddings.weight"] == (64, 64)
    assert tiny["pooler.dense.weight"] == (64, 64)


def test_bert_base_dims():
    graph = load("bert_base")
    assert graph.dtype == "float16"
    assert (graph.dims["batch"].min, graph.dims["batch"].max, graph.dims["batch"].opt) == (1, 256, 32)
    assert (graph.dims["seq"].min, graph.dims["seq"].max, graph.dims["seq"].opt) == (1, 4096, 128)


# -- the small specs in the reference executor ---------------------------------------------------

OUTPUT_SHAPES = {
    "tiny_cnn": {"fc": (3, 10)},
    "tiny_vit": {"heads.head": (3, 10)},
    "tiny_bert": {"last_hidden_state": (3, 16, 64), "pooler_output": (3, 64)},
}


@pytest.mark.parametrize("name", TINY)
def test_tiny_reference_runs(name):
    graph = load(name)
    assert graph.dtype == "float32"
    out = run_reference(graph, random_inputs(graph, {"batch": 3}))
    assert {k: v.shape for k, v in out.items()} == OUTPUT_SHAPES[name]
    for value in out.values():
        assert np.isfinite(value).all() and value.std() > 1e-3


@pytest.mark.parametrize("name", TINY)
def test_batch_rows_are_independent(name):
    graph = load(name)
    pair = random_inputs(graph, {"batch": 2}, seed=1)
    first = {k: v[:1] for k, v in pair.items()}
    both, one = run_reference(graph, pair), run_reference(graph, first)
    for out in graph.outputs:
        np.testing.assert_allclose(both[out][:1], one[out], rtol=1e-5, atol=1e-6)
        assert not np.allclose(both[out][0], both[out][1])  # the rows really differ


def test_tiny_bert_masked_tail_is_invisible():
    """seq 12 with the last 4 tokens masked gives the seq 8 result on the first 8 tokens."""
    graph = load("tiny_bert")
    long = random_inputs(graph, {"batch": 2, "seq": 12}, seed=2)
    long["attention_mask"] = np.ones((2, 12), np.int64)
    long["attention_mask"][:, 8:] = 0
    short = {k: v[:, :8] for k, v in long.items()}
    a, b = run_reference(graph, long), run_reference(graph, short)
    np.testing.assert_allclose(a["last_hidden_state"][:, :8], b["last_hidden_state"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a["pooler_output"], b["pooler_output"], rtol=1e-5, atol=1e-6)
    # unmasked, the extra tokens do change the result
    long["attention_mask"][:] = 1
    c = run_reference(graph, long)
    assert not np.allclose(c["pooler_output"], b["pooler_output"], atol=1e-4)


def test_tiny_bert_seq_bounds():
    graph = load("tiny_bert")
    for seq in (graph.dims["seq"].min, graph.dims["seq"].max):
        out = run_reference(graph, random_inputs(graph, {"batch": 1, "seq": seq}))
        assert out["last_hidden_state"].shape == (1, seq, 64)
