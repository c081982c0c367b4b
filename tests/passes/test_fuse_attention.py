import numpy as np
import pytest

from ait_build.passes import fuse_attention

from .helpers import check_pass, model, node_of, ops, target

DIMS = "{batch: {min: 1, max: 4, opt: 2}, seq: {min: 1, max: 16, opt: 5}}"
INPUTS = "{x: {shape: [batch, seq, 32]}, mask: {shape: [batch, 1, 1, seq]}}"


def layer(scores: str = "", k_path: str = "", qk: str = "transpose_b: true") -> str:
    """A written-out BERT self-attention (4 heads of 8) with replaceable score and key steps."""
    heads = "[batch, seq, 4, 8]"
    k_path = k_path or f"""
        - {{name: k_split, op: reshape, inputs: [key], shape: {heads}}}
        - {{name: k_heads, op: permute, dims: [0, 2, 1, 3]}}"""
    scores = scores or """
        - {name: scaled, op: div, inputs: [qk], scalar: 2.8284271}
        - {name: masked, op: add, inputs: [scaled, mask]}"""
    return f"""
        - {{name: query, op: linear, inputs: [x], out_features: 32}}
        - {{name: key, op: linear, inputs: [x], out_features: 32}}
        - {{name: value, op: linear, inputs: [x], out_features: 32}}
        - {{name: q_split, op: reshape, inputs: [query], shape: {heads}}}
        - {{name: q_heads, op: permute, dims: [0, 2, 1, 3]}}{k_path}
        - {{name: v_split, op: reshape, inputs: [value], shape: {heads}}}
        - {{name: v_heads, op: permute, dims: [0, 2, 1, 3]}}
        - {{name: qk, op: matmul, inputs: [q_heads, k_heads], {qk}}}{scores}
        - {{name: probs, op: softmax, axis: -1}}
        - {{name: context, op: matmul, inputs: [probs, v_heads]}}
        - {{name: merge, op: permute, dims: [0, 2, 1, 3]}}
        - {{name: out, op: reshape, shape: [batch, seq, 32]}}
        """


def build(text: str, outputs: str = "[out]"):
    return model(text, INPUTS, outputs, dims=DIMS)


def test_bert_pattern_becomes_one_packed_attention():
    g = build(layer())
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2, "seq": 5})
    assert ops(after) == ["linear", "multi_head_attention"]
    assert summary == "1 attention patterns fused, 1 q/k/v projections packed"
    attn, qkv = node_of(after, "multi_head_attention"), node_of(after, "linear")
    assert attn.inputs == [qkv.output, "mask"] and attn.outputs == ["out"]
    assert attn.attrs["packed"] and attn.attrs["num_heads"] == 4 and attn.attrs["head_dim"] == 8
    assert attn.attrs["scale"] == pytest.approx(1 / 2.8284271)
    assert qkv.attrs["out_features"] == 96 and qkv.name == "attention.qkv"
    assert after.weights.get(qkv.weights["weight"]).shape == (96, 32)


@pytest.mark.parametrize("variant", ["mul", "alpha", "k_transposed", "k_swapped"])
def test_scale_and_key_layout_variants(variant):
    kt = "[batch, seq, 4, 8]"
    text = {
        "mul": layer(scores="\n        - {name: scaled, op: mul, inputs: [qk], scalar: 0.35}"),
        "alpha": layer(qk="transpose_b: true, alpha: 0.35", scores=" "),
        "k_transposed": layer(qk="transpose_b: false", k_path=f"""
        - {{name: k_split, op: reshape, inputs: [key], shape: {kt}}}
        - {{name: k_heads, op: permute, dims: [0, 2, 3, 1]}}"""),
        "k_swapped": layer(qk="transpose_b: false", k_path=f"""
        - {{name: k_split, op: reshape, inputs: [key], shape: {kt}}}
        - {{name: k_h, op: permute, dims: [0, 2, 1, 3]}}
        - {{name: k_heads, op: transpose, dim0: -1, dim1: -2}}"""),
    }[variant]
    after, _ = check_pass(build(text), fuse_attention.run, dims={"batch": 3, "seq": 7})
    assert ops(after) == ["linear", "multi_head_attention"]
    scale = node_of(after, "multi_head_attention").attrs["scale"]
    assert scale == pytest.approx(0.35 if variant in ("mul", "alpha") else 1 / 2.8284271)


def test_not_fused_when_probabilities_are_an_output_or_bias_is_scaled():
    g = build(layer(), outputs="[out, probs]")
    after, summary = check_pass(g, fuse_attention.run)
    assert summary == "" and "softmax" in ops(after)
    scaled_bias = layer(scores="""
        - {name: masked, op: add, inputs: [qk, mask]}
        - {name: scaled, op: div, scalar: 2.0}""")
    after, summary = check_pass(build(scaled_bias), fuse_attention.run)
    assert summary == "" and "softmax" in ops(after)


def test_a_key_projection_without_bias_packs_with_zeros():
    """Whisper's k_proj has no bias where q_proj and v_proj have one."""
    text = layer().replace("{name: key, op: linear, inputs: [x], out_features: 32}",
                           "{name: key, op: linear, inputs: [x], out_features: 32, bias: false}")
    after, summary = check_pass(build(text), fuse_attention.run, dims={"batch": 2, "seq": 5})
    assert summary == "1 attention patterns fused, 1 q/k/v projections packed"
    qkv = node_of(after, "linear")
    bias = after.weights.get(qkv.weights["bias"])
    assert qkv.attrs["bias"] and bias.shape == (96,) and not bias[32:64].any()
    np.testing.assert_array_equal(bias[:32], build(text).weights.get("query.bias"))


def test_projections_of_different_tensors_stay_separate():
    text = layer().replace("{name: value, op: linear, inputs: [x]",
                           "{name: x2, op: relu, inputs: [x]}\n        - {name: value, op: linear, inputs: [x2]")
    after, summary = check_pass(build(text), fuse_attention.run)
    assert summary == "1 attention patterns fused"
    assert ops(after).count("linear") == 3 and not node_of(after, "multi_head_attention").attrs["packed"]


def test_target_without_fused_attention_is_left_alone():
    g = build(layer())
    after, summary = check_pass(g, fuse_attention.run, target("cpu", fused_attention=False))
    assert summary == "" and ops(after) == ops(g)


def _onnx_sdpa(guard: bool, finite: bool = True) -> str:
    """The attention of PyTorch's ONNX export of scaled_dot_product_attention, as imported: q
    and k each times sqrt(scale) (q before its head permute, k after), a boolean mask turned
    into where(mask, 0, finfo.min) and, after the softmax, the NaN guard where(p != p, 0, p)."""
    low = "-3.4028234663852886e+38" if finite else "-.inf"
    text = layer(k_path="""
        - {name: k_split, op: reshape, inputs: [key], shape: [batch, seq, 4, 8]}
        - {name: k_h, op: permute, dims: [0, 2, 1, 3]}
        - {name: k_heads, op: mul, scalar: 0.5946035}""", scores=f"""
        - {{name: keep, op: greater, inputs: [mask], scalar: 0.5}}
        - {{name: zero, op: constant, shape: [1, 1, 1, 1], value: 0.0}}
        - {{name: low, op: constant, shape: [1, 1, 1, 1], value: {low}}}
        - {{name: bias, op: where, inputs: [keep, zero, low]}}
        - {{name: masked, op: add, inputs: [qk, bias]}}""")
    q_heads = "- {name: q_heads, op: permute"
    text = text.replace(q_heads, "- {name: q_s, op: mul, scalar: 0.5946035}\n        " + q_heads)
    if guard:
        context = "- {name: context, op: matmul, inputs: [probs, v_heads]}"
        text = text.replace(context, """- {name: isnan, op: not_equal, inputs: [probs, probs]}
        - {name: nothing, op: constant, shape: [1, 1, 1, 1], value: 0.0}
        - {name: guarded, op: where, inputs: [isnan, nothing, probs]}
        - {name: context, op: matmul, inputs: [guarded, v_heads]}""")
    return text


@pytest.mark.parametrize("guard", [False, True])
def test_scale_on_q_and_k_multiplies_and_the_nan_guard_goes(guard):
    after, summary = check_pass(build(_onnx_sdpa(guard)), fuse_attention.run,
                                dims={"batch": 2, "seq": 6})
    assert summary.startswith("1 attention patterns fused"), summary
    assert [op for op in ops(after) if op not in ("greater", "constant", "where")] == \
        ["linear", "multi_head_attention"], ops(after)
    attn = node_of(after, "multi_head_attention")
    assert attn.attrs["scale"] == pytest.approx(0.5946035 ** 2)
    assert ops(after).count("constant") == 2  # the mask's fills stay, the guard's zero goes


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the NaN rows themselves
def test_nan_guard_stays_when_the_mask_can_be_infinite():
    """where(mask, 0, -inf): a fully masked row is NaN after the softmax, the guard makes it 0,
    and the fused kernel would not."""
    after, summary = check_pass(build(_onnx_sdpa(True, finite=False)), fuse_attention.run)
    assert summary == "" and "softmax" in ops(after)


# Swin's window partition of [batch, 8, 8, 16] into 2x2 windows of 4x4 tokens, the qkv linear
# and its q, k and v (2 heads of 8) as slices of one [b, s, 3, h, d] view
WINDOW_QKV = """
        - {name: part, op: reshape, inputs: [x], shape: [batch, 2, 4, 2, 4, 16]}
        - {name: wins, op: permute, dims: [0, 1, 3, 2, 4, 5]}
        - {name: tokens, op: reshape, shape: [-1, 16, 16]}
        - {name: qkv, op: linear, out_features: 48}
        - {name: split, op: reshape, shape: [0, 16, 3, 2, 8]}
        - {name: q_sel, op: slice, inputs: [split], axis: 2, start: 0, end: 1}
        - {name: q_h, op: reshape, shape: [0, 16, 2, 8]}
        - {name: k_sel, op: slice, inputs: [split], axis: 2, start: 1, end: 2}
        - {name: k_h, op: reshape, shape: [0, 16, 2, 8]}
        - {name: v_sel, op: slice, inputs: [split], axis: 2, start: 2, end: 3}
        - {name: v_h, op: reshape, shape: [0, 16, 2, 8]}
"""


def swin_windows(shifted: bool, gathered: bool = False) -> str:
    """torchvision's Swin window attention as the importer writes it (2x2 windows of 4x4 tokens,
    2 heads of 8): scores permuted to [q, k, batch, heads], the relative position bias added
    there, and (shifted) the batch split into images x windows for the per-window mask."""
    mask = """
        - {name: split_b, op: reshape, shape: [16, 16, batch, 4, 2]}
        - {name: window_mask, op: parameter, shape: [16, 16, 1, 4, 1]}
        - {name: masked, op: add, inputs: [split_b, window_mask]}
        - {name: merged, op: reshape, shape: [16, 16, -1, 2]}""" if shifted else ""
    # torchvision's relative position bias: a gather from a table (constant folding leaves it)
    relpos = """- {name: table, op: parameter, shape: [31, 2]}
        - {name: index, op: parameter, shape: [256], dtype: int64}
        - {name: rows, op: gather, inputs: [table, index], axis: 0}
        - {name: relpos, op: reshape, shape: [16, 16, 1, 2]}""" if gathered else \
        "- {name: relpos, op: parameter, shape: [16, 16, 1, 2]}"
    return WINDOW_QKV + f"""
        - {{name: q_s, op: mul, inputs: [q_h], scalar: 0.35}}
        - {{name: qp, op: permute, dims: [0, 2, 1, 3]}}
        - {{name: kp, op: permute, inputs: [k_h], dims: [0, 2, 3, 1]}}
        - {{name: qk, op: matmul, inputs: [qp, kp]}}
        - {{name: sc, op: permute, dims: [2, 3, 0, 1]}}
        {relpos}
        - {{name: biased, op: add, inputs: [sc, relpos]}}{mask}
        - {{name: probs, op: softmax, axis: 1}}
        - {{name: pb, op: permute, dims: [2, 3, 0, 1]}}
        - {{name: vp, op: permute, inputs: [v_h], dims: [0, 2, 1, 3]}}
        - {{name: ctx, op: matmul, inputs: [pb, vp]}}
        - {{name: back, op: permute, dims: [0, 2, 1, 3]}}
        - {{name: out, op: reshape, shape: [batch, 2, 2, 4, 4, 16]}}
        """


@pytest.mark.parametrize("shifted, gathered", [(False, False), (True, False), (True, True)])
def test_swin_window_attention_becomes_one_packed_attention(shifted, gathered):
    g = model(swin_windows(shifted, gathered), "{x: {shape: [batch, 8, 8, 16]}}", "[out]")
    if gathered:
        index = next(n for n in g.nodes if n.name == "index")
        g.weights.set(index.weights["value"], np.arange(256) * 7 % 31)
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 3})
    assert summary == "1 attention patterns fused"
    assert ops(after) == ["reshape", "permute", "reshape", "linear", "parameter",
                          "multi_head_attention", "reshape"]
    attn, bias = node_of(after, "multi_head_attention"), node_of(after, "parameter")
    assert attn.inputs == ["qkv", bias.output] and attn.attrs["packed"]
    assert attn.attrs["scale"] == pytest.approx(0.35) and attn.outputs != ["out"]
    # the relative position bias and the mask, summed at build time in [windows, heads, q, k]
    assert [d.value for d in bias.attrs["shape"]] == ([4, 2, 16, 16] if shifted else [1, 2, 16, 16])
    assert attn.attrs.get("bias_period", 0) == (4 if shifted else 0)


def test_packed_slices_with_a_bias_defined_after_them():
    """ONNX's Swin: canonical scores, q/k/v sliced from the packed qkv, the bias a weight defined
    after the slices; the attention goes where the pattern ends, after everything it reads."""
    text = swin_windows(False).replace("""
        - {name: sc, op: permute, dims: [2, 3, 0, 1]}
        - {name: relpos, op: parameter, shape: [16, 16, 1, 2]}
        - {name: biased, op: add, inputs: [sc, relpos]}
        - {name: probs, op: softmax, axis: 1}
        - {name: pb, op: permute, dims: [2, 3, 0, 1]}""", """
        - {name: relpos, op: parameter, shape: [1, 2, 16, 16]}
        - {name: biased, op: add, inputs: [qk, relpos]}
        - {name: pb, op: softmax, axis: -1}""")
    g = model(text, "{x: {shape: [batch, 8, 8, 16]}}", "[out]")
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2})
    attn = node_of(after, "multi_head_attention")
    assert summary == "1 attention patterns fused" and attn.inputs == ["qkv", "relpos:0"]


def swin_v2_windows(shifted: bool, logit: str = "shape: [1, 2, 1, 1]") -> str:
    """torchvision's Swin V2 window attention after fuse_rmsnorm: q and k normalized over the
    head dim (cosine attention) before the head permute, the scores times a logit scale per
    head, canonical [batch, heads, q, k] scores with the relative position bias and (shifted)
    the batch split into images x windows for the per-window mask."""
    mask = """
        - {name: split_b, op: reshape, shape: [batch, 4, 2, 16, 16]}
        - {name: window_mask, op: parameter, shape: [1, 4, 1, 16, 16]}
        - {name: masked, op: add, inputs: [split_b, window_mask]}
        - {name: merged, op: reshape, shape: [-1, 2, 16, 16]}""" if shifted else ""
    return WINDOW_QKV + f"""
        - {{name: q_n, op: rms_norm, inputs: [q_h], eps: 1.0e-20}}
        - {{name: k_n, op: rms_norm, inputs: [k_h], eps: 1.0e-20}}
        - {{name: qp, op: permute, inputs: [q_n], dims: [0, 2, 1, 3]}}
        - {{name: kp, op: permute, inputs: [k_n], dims: [0, 2, 1, 3]}}
        - {{name: qk, op: matmul, inputs: [qp, kp], transpose_b: true}}
        - {{name: logit, op: parameter, {logit}}}
        - {{name: scaled, op: mul, inputs: [qk, logit]}}
        - {{name: relpos, op: parameter, shape: [1, 2, 16, 16]}}
        - {{name: biased, op: add, inputs: [scaled, relpos]}}{mask}
        - {{name: probs, op: softmax, axis: -1}}
        - {{name: vp, op: permute, inputs: [v_h], dims: [0, 2, 1, 3]}}
        - {{name: ctx, op: matmul, inputs: [probs, vp]}}
        - {{name: back, op: permute, dims: [0, 2, 1, 3]}}
        - {{name: out, op: reshape, shape: [batch, 2, 2, 4, 4, 16]}}
        """


@pytest.mark.parametrize("shifted", [False, True])
def test_cosine_window_attention_with_a_logit_scale_per_head(shifted):
    g = model(swin_v2_windows(shifted), "{x: {shape: [batch, 8, 8, 16]}}", "[out]")
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2})
    assert summary == "1 attention patterns fused" and "softmax" not in ops(after)
    attn = node_of(after, "multi_head_attention")
    assert not attn.attrs["packed"] and len(attn.inputs) == 4
    q, k, v = (next(n for n in after.nodes if t in n.outputs) for t in attn.inputs[:3])
    # q times its head's logit scale (repeated over the head dim); k as normalized; v the last
    # third of the packed qkv
    assert q.op == "mul" and k.op == "reshape" and k.inputs == ["k_n"]
    assert v.op == "slice" and v.inputs == ["qkv"] and v.attrs["start"].value == 32
    factors = next(n for n in after.nodes if q.inputs[1] in n.outputs)
    logit = next(n for n in g.nodes if n.name == "logit")
    np.testing.assert_allclose(after.weights.get(factors.weights["value"]),
                               np.repeat(g.weights.get(logit.weights["value"]).reshape(2), 8))
    assert attn.attrs.get("bias_period", 0) == (4 if shifted else 0)


def test_one_logit_scale_for_every_head_is_the_attention_scale():
    g = model(swin_v2_windows(False, logit="shape: [1, 1, 1, 1]"),
              "{x: {shape: [batch, 8, 8, 16]}}", "[out]")
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2})
    attn = node_of(after, "multi_head_attention")
    assert summary == "1 attention patterns fused" and "mul" not in ops(after)
    logit = next(n for n in g.nodes if n.name == "logit")
    assert attn.attrs["scale"] == pytest.approx(g.weights.get(logit.weights["value"]).item())


def test_split_of_one_qkv_tensor_is_read_packed():
    # GPT-2: one c_attn linear, split in three along the features, straight into the attention
    g = model("""
        - {name: qkv, op: linear, inputs: [x], out_features: 96}
        - {name: parts, op: split, inputs: [qkv], axis: 2, sizes: [32, 32, 32], outputs: [q, k, v]}
        - {name: a, op: multi_head_attention, inputs: [q, k, v], num_heads: 4, head_dim: 8, causal: true}
        """, "{x: {shape: [batch, seq, 32]}}", "[a]", DIMS)
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2, "seq": 5})
    attn = node_of(after, "multi_head_attention")
    assert ops(after) == ["linear", "multi_head_attention"] and attn.inputs == ["qkv"]
    assert attn.attrs["packed"] and summary == "1 q/k/v projections packed"
    # parts in another order, or a part read elsewhere too, keep the split
    for inputs, outputs in (("[k, q, v]", "[a]"), ("[q, k, v]", "[a, v]")):
        g = model(f"""
            - {{name: qkv, op: linear, inputs: [x], out_features: 96}}
            - {{name: parts, op: split, inputs: [qkv], axis: 2, sizes: [32, 32, 32], outputs: [q, k, v]}}
            - {{name: a, op: multi_head_attention, inputs: {inputs}, num_heads: 4, head_dim: 8}}
            """, "{x: {shape: [batch, seq, 32]}}", outputs, DIMS)
        after, _ = check_pass(g, fuse_attention.run, dims={"batch": 2, "seq": 5})
        assert "split" in ops(after)


def two_batch_axes(grid: bool, bias: str = "[1, 1, 2, 16, 16]") -> str:
    """MaxViT's attention as torchvision's import writes it: scores [batch, windows, heads, s, s]
    of q, k, v split from one qkv linear, K scaled. Its window attention has the windows before
    the sequence ([batch, 4, 16, 32]); its grid attention the sequence first ([batch, 16, 4, 32])
    and the windows taken from the axis after it."""
    split, q_dims, k_dims = ("[batch, 16, 4, 2, 16]", "[0, 2, 3, 1, 4]", "[0, 2, 3, 4, 1]") \
        if grid else ("[batch, 4, 16, 2, 16]", "[0, 1, 3, 2, 4]", "[0, 1, 3, 4, 2]")
    return f"""
        - {{name: qkv, op: linear, inputs: [x], out_features: 96}}
        - {{name: parts, op: split, inputs: [qkv], axis: 3, sizes: [32, 32, 32], outputs: [q, k, v]}}
        - {{name: q_h, op: reshape, inputs: [q], shape: {split}}}
        - {{name: k_h, op: reshape, inputs: [k], shape: {split}}}
        - {{name: v_h, op: reshape, inputs: [v], shape: {split}}}
        - {{name: k_s, op: mul, inputs: [k_h], scalar: 0.25}}
        - {{name: qp, op: permute, inputs: [q_h], dims: {q_dims}}}
        - {{name: kp, op: permute, inputs: [k_s], dims: {k_dims}}}
        - {{name: qk, op: matmul, inputs: [qp, kp]}}
        - {{name: relpos, op: parameter, shape: {bias}}}
        - {{name: biased, op: add, inputs: [qk, relpos]}}
        - {{name: probs, op: softmax, axis: -1}}
        - {{name: vp, op: permute, inputs: [v_h], dims: {q_dims}}}
        - {{name: ctx, op: matmul, inputs: [probs, vp]}}
        - {{name: back, op: permute, dims: [0, 1, 3, 2, 4]}}
        - {{name: out, op: reshape, shape: [batch, 4, 16, 32]}}
        """


def test_window_attention_with_two_batch_axes_reads_the_split_packed():
    g = model(two_batch_axes(grid=False), "{x: {shape: [batch, 4, 16, 32]}}", "[out]")
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2})
    assert summary == "1 attention patterns fused, 1 q/k/v projections packed"
    assert ops(after) == ["linear", "parameter", "reshape", "reshape", "multi_head_attention",
                          "reshape"]
    attn = node_of(after, "multi_head_attention")
    packed, bias = (next(n for n in after.nodes if t in n.outputs) for t in attn.inputs)
    # the whole qkv and the bias seen as [batch * windows, s, 3 * h * d] and [1, h, s, s]
    assert packed.inputs == ["qkv"] and attn.attrs["packed"]
    assert [str(d) for d in after.tensors[packed.output].shape] == ["4*batch", "16", "96"]
    assert [d.value for d in after.tensors[bias.output].shape] == [1, 2, 16, 16]
    assert attn.attrs["scale"] == pytest.approx(0.25)


def test_grid_attention_moves_the_windows_before_the_sequence():
    g = model(two_batch_axes(grid=True), "{x: {shape: [batch, 16, 4, 32]}}", "[out]")
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2})
    assert summary == "1 attention patterns fused" and "softmax" not in ops(after)
    attn = node_of(after, "multi_head_attention")
    for t in attn.inputs[:3]:  # q, k, v each: [batch, 16, 4, 32] -> [batch, 4, 16, 32], flattened
        flat = next(n for n in after.nodes if t in n.outputs)
        moved = next(n for n in after.nodes if flat.inputs[0] in n.outputs)
        assert flat.op == "reshape" and moved.op == "permute" and moved.attrs["dims"] == (0, 2, 1, 3)


def test_a_bias_that_varies_along_the_windows_is_not_fused():
    g = model(two_batch_axes(grid=False, bias="[1, 4, 2, 16, 16]"),
              "{x: {shape: [batch, 4, 16, 32]}}", "[out]")
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2})
    assert summary == "" and "softmax" in ops(after)


def test_size_one_axes_moved_by_the_head_split():
    # MaxViT's last grid attention: one window, [batch, 16, 1, 32] split as [batch, 1, 16, 2, 16]
    text = two_batch_axes(grid=False).replace("[batch, 4, 16, 2, 16]", "[batch, 1, 16, 2, 16]") \
        .replace("[batch, 4, 16, 32]", "[batch, 1, 16, 32]")
    g = model(text, "{x: {shape: [batch, 16, 1, 32]}}", "[out]")
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2})
    assert summary == "1 attention patterns fused" and "softmax" not in ops(after)
    assert "permute" not in ops(after)  # views only


@pytest.mark.parametrize("scaled_split", [False, True])
def test_one_head_split_and_merged_by_reshapes(scaled_split):
    # PVT's first stage as imported: with one head the head permutes move a size-1 axis, so the
    # importer writes reshapes for q, v and the merge (K's transpose stays a permute)
    g = model("""
        - {name: query, op: linear, inputs: [x], out_features: 32}
        - {name: key, op: linear, inputs: [x], out_features: 32}
        - {name: value, op: linear, inputs: [x], out_features: 32}
%s
        - {name: k_split, op: reshape, inputs: [key], shape: [batch, seq, 1, 32]}
        - {name: k_t, op: permute, dims: [0, 2, 3, 1]}
        - {name: qk, op: matmul, inputs: [q_h, k_t]}
        - {name: scaled, op: div, scalar: 5.65}
        - {name: probs, op: softmax, axis: 3}
        - {name: v_h, op: reshape, inputs: [value], shape: [batch, 1, seq, 32]}
        - {name: ctx, op: matmul, inputs: [probs, v_h]}
        - {name: out, op: reshape, shape: [batch, seq, 32]}
        """ % ("""
        - {name: q_split, op: reshape, inputs: [query], shape: [batch, seq, 1, 32]}
        - {name: q_s, op: mul, scalar: 0.5}
        - {name: q_h, op: reshape, shape: [batch, 1, seq, 32]}""" if scaled_split else """
        - {name: q_h, op: reshape, inputs: [query], shape: [batch, 1, seq, 32]}"""),
        "{x: {shape: [batch, seq, 32]}}", "[out]", DIMS)
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2, "seq": 5})
    assert summary == "1 attention patterns fused, 1 q/k/v projections packed"
    assert ops(after) == ["linear", "multi_head_attention"]
    attn = node_of(after, "multi_head_attention")
    assert attn.attrs["num_heads"] == 1 and attn.outputs == ["out"]
    assert attn.attrs["scale"] == pytest.approx((0.5 if scaled_split else 1.0) / 5.65)


def heads_in_batch(bias: str = "") -> str:
    """torch.nn.MultiheadAttention (batch_first, called with need_weights=True) as imported: q, k
    and v slices of one [b, s, 3, e] view of the in-projection, moved to its sequence-first
    layout, the heads folded into the batch ([s, b*h, d] -> [b*h, s, d]), three-dimensional
    matmuls, the output back to [s, b, e] for the out-projection and to [b, s, e] after it."""
    return f"""
        - {{name: qkv, op: linear, inputs: [x], out_features: 96}}
        - {{name: view, op: reshape, shape: [batch, seq, 3, 32]}}
        - {{name: q_sel, op: slice, inputs: [view], axis: 2, start: 0, end: 1}}
        - {{name: q_b, op: reshape, shape: [batch, seq, 32]}}
        - {{name: k_sel, op: slice, inputs: [view], axis: 2, start: 1, end: 2}}
        - {{name: k_b, op: reshape, shape: [batch, seq, 32]}}
        - {{name: v_sel, op: slice, inputs: [view], axis: 2, start: 2, end: 3}}
        - {{name: v_b, op: reshape, shape: [batch, seq, 32]}}
        - {{name: q_s, op: permute, inputs: [q_b], dims: [1, 0, 2]}}
        - {{name: q_h, op: reshape, shape: [seq, -1, 8]}}
        - {{name: k_s, op: permute, inputs: [k_b], dims: [1, 0, 2]}}
        - {{name: k_h, op: reshape, shape: [seq, -1, 8]}}
        - {{name: v_s, op: permute, inputs: [v_b], dims: [1, 0, 2]}}
        - {{name: v_h, op: reshape, shape: [seq, -1, 8]}}
        - {{name: q_scaled, op: mul, inputs: [q_h], scalar: 0.35}}
        - {{name: q_n, op: permute, dims: [1, 0, 2]}}
        - {{name: k_t, op: permute, inputs: [k_h], dims: [1, 2, 0]}}
        - {{name: qk, op: matmul, inputs: [q_n, k_t]}}{bias}
        - {{name: probs, op: softmax, axis: 2}}
        - {{name: v_n, op: permute, inputs: [v_h], dims: [1, 0, 2]}}
        - {{name: ctx, op: matmul, inputs: [probs, v_n]}}
        - {{name: ctx_s, op: permute, dims: [1, 0, 2]}}
        - {{name: merged, op: reshape, shape: [seq, batch, 32]}}
        - {{name: proj, op: linear, out_features: 32}}
        - {{name: out, op: permute, dims: [1, 0, 2]}}
        """


@pytest.mark.parametrize("bias", ["", "per_head", "shared"])
def test_heads_folded_into_the_batch(bias):
    text = heads_in_batch({"": "", "per_head": """
        - {name: mask, op: reshape, inputs: [m], shape: [-1, 5, 5]}
        - {name: masked, op: add, inputs: [qk, mask]}""", "shared": """
        - {name: mask, op: parameter, shape: [5, 5]}
        - {name: masked, op: add, inputs: [qk, mask]}"""}[bias]).replace("seq", "5")
    g = model(text, "{x: {shape: [batch, 5, 32]}, m: {shape: [batch, 4, 5, 5]}}", "[out]")
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 3})
    assert summary == "1 attention patterns fused"
    attn = node_of(after, "multi_head_attention")
    assert attn.inputs[0] == "qkv" and attn.attrs["packed"] and attn.attrs["num_heads"] == 4
    assert attn.attrs["scale"] == pytest.approx(0.35)
    # the rows come out [b, s, e]; the out-projection reads them sequence-first
    assert ops(after)[-3:] == ["permute", "linear", "permute"]
    if bias == "per_head":  # [b*h, q, k] read as [b, h, q, k]
        shape = after.tensors[attn.inputs[1]].shape
        assert [str(d) for d in shape] == ["batch", "4", "5", "5"]


def test_heads_in_batch_with_another_head_order_is_left():
    # the heads outside the batch ([h*b]: h-major) is not the attention's [b, h] order
    text = heads_in_batch().replace("""- {name: q_h, op: reshape, shape: [seq, -1, 8]}""",
                                    """- {name: q_4, op: reshape, shape: [seq, batch, 4, 8]}
        - {name: q_p, op: permute, dims: [0, 2, 1, 3]}
        - {name: q_h, op: reshape, shape: [seq, -1, 8]}""")
    g = model(text, "{x: {shape: [batch, seq, 32]}}", "[out]", DIMS)
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2, "seq": 5})
    assert summary == "" and "softmax" in ops(after)


def test_heads_in_batch_scores_masked_as_four_dims():
    # DeBERTa-v2: [b*h, s, d] q and k (also read by its relative-position terms), a bias of the
    # same [b*h, s, s] added, the scores seen as [b, h, s, s] for where(~mask, min, scores) and
    # the softmax, the probabilities back to [b*h, s, s] for p v
    heads = "[batch, 5, 4, 8]"
    g = model(f"""
        - {{name: query, op: linear, inputs: [x], out_features: 32}}
        - {{name: key, op: linear, inputs: [x], out_features: 32}}
        - {{name: value, op: linear, inputs: [x], out_features: 32}}
        - {{name: q_4, op: reshape, inputs: [query], shape: {heads}}}
        - {{name: q_p, op: permute, dims: [0, 2, 1, 3]}}
        - {{name: q_3, op: reshape, shape: [-1, 5, 8]}}
        - {{name: k_4, op: reshape, inputs: [key], shape: {heads}}}
        - {{name: k_p, op: permute, dims: [0, 2, 1, 3]}}
        - {{name: k_3, op: reshape, shape: [-1, 5, 8]}}
        - {{name: v_4, op: reshape, inputs: [value], shape: {heads}}}
        - {{name: v_p, op: permute, dims: [0, 2, 1, 3]}}
        - {{name: v_3, op: reshape, shape: [-1, 5, 8]}}
        - {{name: k_s, op: div, inputs: [k_3], scalar: 2.0}}
        - {{name: qk, op: matmul, inputs: [q_3, k_s], transpose_b: true}}
        - {{name: rel, op: matmul, inputs: [q_3, k_3], transpose_b: true}}
        - {{name: biased, op: add, inputs: [qk, rel]}}
        - {{name: scores, op: reshape, shape: [batch, 4, 5, 5]}}
        - {{name: keep, op: cast, inputs: [m], dtype: bool}}
        - {{name: drop, op: logical_not}}
        - {{name: fill, op: constant, shape: [1, 1, 1, 1], value: -3.4e+38}}
        - {{name: masked, op: where, inputs: [drop, fill, scores]}}
        - {{name: probs, op: softmax, axis: 3}}
        - {{name: probs_3, op: reshape, shape: [-1, 5, 5]}}
        - {{name: ctx, op: matmul, inputs: [probs_3, v_3]}}
        - {{name: ctx_4, op: reshape, shape: [batch, 4, 5, 8]}}
        - {{name: back, op: permute, dims: [0, 2, 1, 3]}}
        - {{name: out, op: reshape, shape: [batch, 5, 32]}}
        """, "{x: {shape: [batch, 5, 32]}, m: {shape: [batch, 1, 5, 5]}}", "[out]")
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2})
    assert summary == "1 attention patterns fused" and "softmax" not in ops(after)
    attn = node_of(after, "multi_head_attention")
    assert attn.attrs["scale"] == pytest.approx(0.5) and attn.outputs == ["out"]
    # the bias: the relative term as [b, h, s, s] plus where(~mask, min, 0)
    total = next(n for n in after.nodes if attn.inputs[-1] in n.outputs)
    assert total.op == "add" and "rel" not in attn.inputs


def test_two_bias_terms_are_summed():
    # MPNet: relative positions, then the mask, added to the scaled scores
    text = layer(scores="""
        - {name: scaled, op: div, inputs: [qk], scalar: 2.8284271}
        - {name: rel, op: parameter, shape: [1, 4, 1, 1]}
        - {name: positioned, op: add, inputs: [scaled, rel]}
        - {name: masked, op: add, inputs: [positioned, mask]}""")
    after, summary = check_pass(build(text), fuse_attention.run, dims={"batch": 2, "seq": 5})
    assert summary == "1 attention patterns fused, 1 q/k/v projections packed"
    attn = node_of(after, "multi_head_attention")
    total = next(n for n in after.nodes if attn.inputs[-1] in n.outputs)
    assert total.op == "add" and set(total.inputs) == {"mask", "rel:0"}


def bloom_layer(i: int, x: str) -> str:
    """BLOOM's attention: q, k, v interleaved per head ([b, s, h, 3, d]), [b*h, s, d] matmuls
    with the ALiBi term added (baddbmm), the scores seen as [b, h, s, s] for the mask."""
    return f"""
        - {{name: qkv{i}, op: linear, inputs: [{x}], out_features: 96}}
        - {{name: view{i}, op: reshape, shape: [batch, 5, 4, 3, 8]}}""" + "".join(f"""
        - {{name: {p}{i}_sel, op: slice, inputs: [view{i}], axis: 3, start: {j}, end: {j + 1}}}
        - {{name: {p}{i}_h, op: reshape, shape: [batch, 5, 4, 8]}}
        - {{name: {p}{i}_p, op: permute, dims: [0, 2, 1, 3]}}
        - {{name: {p}{i}_3, op: reshape, shape: [-1, 5, 8]}}""" for j, p in enumerate("qkv")) + f"""
        - {{name: qk{i}, op: matmul, inputs: [q{i}_3, k{i}_3], transpose_b: true, alpha: 0.35}}
        - {{name: alibied{i}, op: add, inputs: [qk{i}, alibi]}}
        - {{name: scores{i}, op: reshape, shape: [batch, 4, 5, 5]}}
        - {{name: masked{i}, op: add, inputs: [scores{i}, mask]}}
        - {{name: probs{i}, op: softmax, axis: 3}}
        - {{name: probs{i}_3, op: reshape, shape: [-1, 5, 5]}}
        - {{name: ctx{i}, op: matmul, inputs: [probs{i}_3, v{i}_3]}}
        - {{name: ctx{i}_4, op: reshape, shape: [batch, 4, 5, 8]}}
        - {{name: back{i}, op: permute, dims: [0, 2, 1, 3]}}
        - {{name: out{i}, op: reshape, shape: [batch, 5, 32]}}"""


def test_bloom_attention_and_its_bias_shared_by_the_layers():
    g = model("""
        - {name: slopes, op: reshape, inputs: [a], shape: [-1, 1, 5]}
        - {name: alibi, op: mul, inputs: [slopes], scalar: 1.0}""" + bloom_layer(0, "x") +
              bloom_layer(1, "out0"),
              "{x: {shape: [batch, 5, 32]}, a: {shape: [batch, 4, 1, 5]}, "
              "mask: {shape: [batch, 1, 5, 5]}}", "[out1]")
    after, summary = check_pass(g, fuse_attention.run, dims={"batch": 2})
    assert summary == "2 attention patterns fused" and "softmax" not in ops(after)
    first, second = [n for n in after.nodes if n.op == "multi_head_attention"]
    assert first.attrs["num_heads"] == 4 and first.attrs["scale"] == pytest.approx(0.35)
    assert first.inputs[-1] == second.inputs[-1]  # ALiBi + mask summed once
