import numpy as np
import pytest

from ait_build.passes import attention_masks, fuse_attention
from ait_build.passes.mask_values import CAUSAL, TRUE, Const, MaskValues, Ramp, Tri
from ait_build.passes.rewrite import Uses

from .helpers import check_pass, model, node_of, ops

DIMS = "{batch: {min: 1, max: 3, opt: 2}, seq: {min: 1, max: 12, opt: 5}}"
INPUTS = "{x: {shape: [batch, seq, 32]}, pad: {shape: [batch, seq], dtype: int64}}"
ATTENTION = """
    - {name: q, op: linear, inputs: [x], out_features: 32}
    - {name: k, op: linear, inputs: [x], out_features: 32}
    - {name: v, op: linear, inputs: [x], out_features: 32}
    - {name: zero, op: constant, shape: [1, 1, 1, 1], value: 0.0}
    - {name: fill, op: constant, shape: [1, 1, 1, 1], value: -.inf}
    - {name: bias, op: where, inputs: [mask, zero, fill]}
    - {name: out, op: multi_head_attention, inputs: [q, k, v, bias], num_heads: 4, head_dim: 8}
"""
# positions and the causal test between them, as transformers' GPT-2 export writes them
POSITIONS = """
    - {name: arange, op: iota, shape: [seq], dtype: int64}
    - {name: pos, op: reshape, inputs: [arange], shape: [1, seq]}
    - {name: pos_b, op: expand, inputs: [pos], shape: [batch, -1]}
    - {name: kv, op: reshape, inputs: [pos_b], shape: [batch, 1, 1, seq]}
    - {name: qi, op: reshape, inputs: [pos_b], shape: [batch, 1, seq, 1]}
"""
# the packed-sequence test: segments (diff(positions) != 1).cumsum() equal along q and kv
PACKED = """
    - {name: first, op: slice, inputs: [pos_b], axis: 1, start: 0, end: 1}
    - {name: before, op: sub, inputs: [first], scalar: 1}
    - {name: cat, op: concat, inputs: [before, pos_b], axis: 1}
    - {name: d1, op: slice, inputs: [cat], axis: 1, start: 1}
    - {name: d0, op: slice, inputs: [cat], axis: 1, start: 0, end: -1}
    - {name: diff, op: sub, inputs: [d1, d0]}
    - {name: jump, op: not_equal, inputs: [diff], scalar: 1}
    - {name: jumps, op: cast, inputs: [jump], dtype: int64}
    - {name: padded, op: pad, inputs: [jumps], pads: [0, 0, 1, 0]}
    - {name: shifted, op: slice, inputs: [padded], axis: 1, start: 0, end: -1}
    - {name: seg, op: add, inputs: [jumps, shifted]}
    - {name: seg_q, op: reshape, inputs: [seg], shape: [batch, 1, seq, 1]}
    - {name: seg_k, op: reshape, inputs: [seg], shape: [batch, 1, 1, seq]}
    - {name: same, op: equal, inputs: [seg_q, seg_k]}
"""
# a padding mask from an input, and-ed with q >= 0 (DistilBERT)
PADDING = """
    - {name: keep, op: cast, inputs: [pad], dtype: bool}
    - {name: keep_k, op: reshape, inputs: [keep], shape: [batch, 1, 1, seq]}
    - {name: q_ok, op: greater_equal, inputs: [qi], scalar: 0}
"""


def build(mask: str):
    return model(POSITIONS + mask + ATTENTION, INPUTS, "[out]", dims=DIMS)


def run_on(graph):
    return check_pass(graph, attention_masks.run, dims={"batch": 2, "seq": 5})


def test_gpt2_mask_becomes_causal():
    g = build(PACKED + """
    - {name: causal, op: less_equal, inputs: [kv, qi]}
    - {name: mask, op: logical_and, inputs: [causal, same]}""")
    after, summary = run_on(g)
    attn = node_of(after, "multi_head_attention")
    assert attn.attrs["causal"] and attn.inputs == ["q", "k", "v"]
    assert summary == "1 attention masks run as causal, 1 always-true attention masks dropped"
    assert ops(after) == ["linear"] * 3 + ["multi_head_attention"]  # the mask graph is gone
    for seq in (1, 12):  # every size, not only the one checked above
        check_pass(g, attention_masks.run, dims={"batch": 3, "seq": seq})


def test_padding_mask_keeps_only_its_data():
    g = build(PADDING + "    - {name: mask, op: logical_and, inputs: [q_ok, keep_k]}")
    after, summary = run_on(g)
    attn = node_of(after, "multi_head_attention")
    assert not attn.attrs["causal"] and summary == "1 attention biases made smaller"
    bias = after.tensors[attn.inputs[3]]
    assert [str(d) for d in bias.shape] == ["batch", "1", "1", "seq"]


def test_causal_and_padding_keep_the_padding():
    g = build(PADDING + """
    - {name: causal, op: greater_equal, inputs: [qi, kv]}
    - {name: both, op: logical_and, inputs: [causal, keep_k]}
    - {name: mask, op: logical_and, inputs: [both, q_ok]}""")
    after, _ = run_on(g)
    attn = node_of(after, "multi_head_attention")
    assert attn.attrs["causal"]
    assert [str(d) for d in after.tensors[attn.inputs[3]].shape] == ["batch", "1", "1", "seq"]


@pytest.mark.parametrize("relation", ["less", "shifted"])
def test_other_triangles_stay_masks(relation):
    compare = {"less": "{name: mask, op: less, inputs: [kv, qi]}",  # the diagonal masked too
               "shifted": "{name: mask, op: less_equal, inputs: [kv, q1]}"}[relation]
    g = build("    - {name: q1, op: add, inputs: [qi], scalar: 1}\n    - " + compare)
    after, summary = run_on(g)
    assert summary == "" and not node_of(after, "multi_head_attention").attrs["causal"]


def test_masked_fill_of_the_scores_fuses_into_causal_attention():
    heads = "[batch, seq, 4, 8]"
    g = model(POSITIONS + f"""
    - {{name: causal, op: less_equal, inputs: [kv, qi]}}
    - {{name: q, op: linear, inputs: [x], out_features: 32}}
    - {{name: k, op: linear, inputs: [x], out_features: 32}}
    - {{name: v, op: linear, inputs: [x], out_features: 32}}
    - {{name: q_s, op: reshape, inputs: [q], shape: {heads}}}
    - {{name: qh, op: permute, inputs: [q_s], dims: [0, 2, 1, 3]}}
    - {{name: k_s, op: reshape, inputs: [k], shape: {heads}}}
    - {{name: kh, op: permute, inputs: [k_s], dims: [0, 2, 1, 3]}}
    - {{name: v_s, op: reshape, inputs: [v], shape: {heads}}}
    - {{name: vh, op: permute, inputs: [v_s], dims: [0, 2, 1, 3]}}
    - {{name: qk, op: matmul, inputs: [qh, kh], transpose_b: true}}
    - {{name: scaled, op: div, inputs: [qk], scalar: 2.8284271}}
    - {{name: lowest, op: constant, shape: [1, 1, 1, 1], value: -3.0e+38}}
    - {{name: masked, op: where, inputs: [causal, scaled, lowest]}}
    - {{name: probs, op: softmax, inputs: [masked], axis: -1}}
    - {{name: ctx, op: matmul, inputs: [probs, vh]}}
    - {{name: merge, op: permute, inputs: [ctx], dims: [0, 2, 1, 3]}}
    - {{name: out, op: reshape, inputs: [merge], shape: [batch, seq, 32]}}""", INPUTS, "[out]",
              dims=DIMS)
    fused, summary = check_pass(g, fuse_attention.run, dims={"batch": 2, "seq": 5})
    assert summary.startswith("1 attention patterns fused")
    after, summary = check_pass(fused, attention_masks.run, dims={"batch": 2, "seq": 5})
    assert node_of(after, "multi_head_attention").attrs["causal"]
    assert "multi_head_attention" in ops(after) and "where" not in ops(after)


def values_of(text: str, inputs: str = "{x: {shape: [batch, seq]}}") -> dict:
    g = model(text, inputs, "[out]", dims=DIMS)
    mv = MaskValues(g, Uses(g))
    return {n.output: mv.of(n.output) for n in g.nodes}


def test_values_follow_ramps_through_shapes_and_arithmetic():
    got = values_of("""
    - {name: a, op: iota, shape: [8], start: 2, step: 3, dtype: int64}
    - {name: r, op: reshape, inputs: [a], shape: [1, 8, 1]}
    - {name: s, op: slice, inputs: [r], axis: 1, start: 1, step: 2}
    - {name: m, op: mul, inputs: [s], scalar: 2}
    - {name: f, op: constant, shape: [1, 1, 1], value: -1, dtype: int64}
    - {name: c, op: concat, inputs: [f, r], axis: 1}
    - {name: out, op: sub, inputs: [r, r]}""")
    assert got["a"] == Ramp(-1, 2, 3) and got["r"] == Ramp(-2, 2, 3)
    assert got["s"] == Ramp(-2, 5, 6) and got["m"] == Ramp(-2, 10, 12)
    assert got["c"] == Ramp(-2, -1, 3)  # -1 continues 2, 5, 8, ... backwards
    assert got["out"] == Const(0)


def test_values_of_comparisons():
    got = values_of(POSITIONS + """
    - {name: ge0, op: greater_equal, inputs: [qi], scalar: 0}
    - {name: lt0, op: less, inputs: [qi], scalar: 0}
    - {name: lt3, op: less, inputs: [qi], scalar: 3}
    - {name: tri, op: greater, inputs: [qi, kv]}
    - {name: out, op: logical_and, inputs: [ge0, tri]}""")
    assert got["ge0"] == TRUE and got["lt0"] == Const(False) and got["lt3"] is None
    assert got["tri"] == Tri(-2, -1, -1) and got["out"] == Tri(-2, -1, -1)


def test_a_lower_triangular_weight_is_causal():
    g = model("""
    - {name: table, op: parameter, shape: [1, 1, 6, 6], dtype: bool}
    - {name: rows, op: slice, inputs: [table], axis: 2, start: 0, end: seq}
    - {name: out, op: slice, inputs: [rows], axis: 3, start: 0, end: seq}""", "{x: {shape: [seq]}}",
              "[out]", dims=DIMS.replace("max: 12", "max: 6"))
    g.weights.set(g.nodes[0].weights["value"], np.tril(np.ones((1, 1, 6, 6), bool)))
    assert MaskValues(g, Uses(g)).of("out") == CAUSAL
    g.weights.set(g.nodes[0].weights["value"], np.ones((1, 1, 6, 6), bool))
    assert MaskValues(g, Uses(g)).of("out") == TRUE


# T5 without an attention mask: its position bias, laid out [q, k, 1, heads], masked by an all-true
# [batch, 1, q, k] mask permuted to match, then permuted back to [batch, heads, q, k]
T5_BIAS = """
    - {name: qkv, op: linear, inputs: [x], out_features: 96}
    - {name: ones, op: constant, shape: [batch, 1, 5, 5], value: 1.0, dtype: bool}
    - {name: mask, op: permute, inputs: [ones], dims: [2, 3, 0, 1]}
    - {name: fill, op: constant, shape: [1, 1, 1, 1], value: -3.4e+38}
    - {name: masked, op: where, inputs: [mask, VALUES, fill]}
    - {name: bias, op: permute, inputs: [masked], dims: [2, 3, 0, 1]}
    - {name: out, op: multi_head_attention, inputs: [qkv, bias], num_heads: 4, head_dim: 8,
       packed: true}
"""
T5_INPUTS = "{x: {shape: [batch, 5, 32]}}"


def test_an_always_true_mask_over_a_bias_weight_leaves_the_weight_laid_out():
    g = model("    - {name: table, op: parameter, shape: [5, 5, 1, 4]}" +
              T5_BIAS.replace("VALUES", "table"), T5_INPUTS, "[out]")
    after, summary = check_pass(g, attention_masks.run, dims={"batch": 3})
    assert summary == "1 always-true attention masks dropped"
    assert ops(after) == ["linear", "parameter", "multi_head_attention"]
    bias = after.tensors[node_of(after, "multi_head_attention").inputs[1]]
    assert [str(d) for d in bias.shape] == ["1", "4", "5", "5"]  # one bias for every batch


def test_an_always_true_mask_over_computed_values_permutes_them():
    g = model("""
    - {name: scores, op: linear, inputs: [x], out_features: 20}
    - {name: table, op: reshape, inputs: [scores], shape: [batch, 5, 5, 4]}
    - {name: values, op: permute, inputs: [table], dims: [1, 2, 0, 3]}""" +
              T5_BIAS.replace("VALUES", "values"), T5_INPUTS, "[out]")
    after, summary = check_pass(g, attention_masks.run, dims={"batch": 2})
    assert summary == "1 always-true attention masks dropped"
    assert "where" not in ops(after) and "constant" not in ops(after)


def test_a_padding_mask_over_a_bias_keeps_the_bias():
    per_head = ATTENTION.replace("[mask, zero, fill]", "[mask, per_head, fill]")
    g = model(POSITIONS + PADDING + """
    - {name: mask, op: logical_and, inputs: [q_ok, keep_k]}
    - {name: table, op: linear, inputs: [x], out_features: 4}
    - {name: per_head, op: reshape, inputs: [table], shape: [batch, 4, 1, seq]}""" + per_head,
              INPUTS, "[out]", dims=DIMS)
    after, summary = run_on(g)
    assert summary == "1 attention biases made smaller"
    where = node_of(after, "where")
    assert where.inputs[1] == "per_head" and where.inputs[0] == "keep_k"


def test_values_move_with_a_permute():
    got = values_of(POSITIONS + """
    - {name: causal, op: less_equal, inputs: [kv, qi]}
    - {name: moved, op: permute, inputs: [causal], dims: [2, 3, 0, 1]}
    - {name: back, op: permute, inputs: [moved], dims: [2, 3, 0, 1]}
    - {name: out, op: transpose, inputs: [back], dim0: 0, dim1: 1}""")
    assert got["causal"] == CAUSAL and got["moved"] == Tri(-4, -3, 0)
    assert got["back"] == CAUSAL and got["out"] == CAUSAL


def test_a_padding_mask_seen_through_permutes_keeps_its_layout():
    """where(mask, 0, fill) transposed twice on its way to the attention: the padding term stays,
    laid out as the permutes lay it out, and the outputs are unchanged."""
    through = ATTENTION.replace(
        "{name: bias, op: where, inputs: [mask, zero, fill]}",
        "{name: masked, op: where, inputs: [mask, zero, fill]}\n"
        "    - {name: swapped, op: permute, inputs: [masked], dims: [0, 1, 3, 2]}\n"
        "    - {name: bias, op: transpose, inputs: [swapped], dim0: 2, dim1: 3}")
    g = model(POSITIONS + PADDING + "    - {name: mask, op: logical_and, inputs: [q_ok, keep_k]}"
              + through, INPUTS, "[out]", dims=DIMS)
    after, summary = run_on(g)
    assert summary == "1 attention biases made smaller"
    bias = after.tensors[node_of(after, "multi_head_attention").inputs[3]]
    assert [str(d) for d in bias.shape] == ["batch", "1", "1", "seq"]
