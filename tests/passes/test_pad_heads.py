import numpy as np

from ait_build.passes import pad_heads

from .helpers import assert_unpadded, check_pass, model, ops, target

# MobileViT's attention as fuse_attention leaves it: a packed q/k/v projection, attention over
# the packed tensor, an output projection; heads of 6 features (12 = 2 x 6), one with an [in, out]
# output projection, one whose output has a second reader, and heads of 8 (aligned)
ATTENTIONS = """
- {name: qkv, op: linear, inputs: [x], out_features: 36}
- {name: attn, op: multi_head_attention, inputs: [qkv], num_heads: 2, head_dim: 6, packed: true}
- {name: proj, op: linear, inputs: [attn, x], out_features: 12}
- {name: qkv_io, op: linear, inputs: [x], out_features: 36, bias: false, weight_layout: in_out}
- {name: attn_io, op: multi_head_attention, inputs: [qkv_io], num_heads: 2, head_dim: 6,
   packed: true, scale: 0.5}
- {name: proj_io, op: linear, inputs: [attn_io], out_features: 5, weight_layout: in_out}
- {name: qkv_two, op: linear, inputs: [x], out_features: 36}
- {name: attn_two, op: multi_head_attention, inputs: [qkv_two], num_heads: 2, head_dim: 6,
   packed: true}
- {name: proj_two, op: linear, inputs: [attn_two], out_features: 12}
- {name: qkv8, op: linear, inputs: [x], out_features: 48}
- {name: attn8, op: multi_head_attention, inputs: [qkv8], num_heads: 2, head_dim: 8, packed: true}
- {name: proj8, op: linear, inputs: [attn8], out_features: 12}
"""
INPUTS = "{x: {shape: [batch, 7, 12]}}"
OUTPUTS = "[proj, proj_io, proj_two, attn_two, proj8]"


def test_unaligned_heads_get_zero_features_in_their_projections():
    """Heads of 6 become heads of 8 through zero rows of the q/k/v projection (weight and bias,
    head by head) and zero columns of the output projection; the scale stays 1/sqrt(6); an
    attention whose output another node reads, and aligned heads, keep theirs. The reference
    outputs are unchanged (check_pass)."""
    g = model(ATTENTIONS, INPUTS, OUTPUTS, dtype="float16")
    after, summary = check_pass(g, pad_heads.run, target("h200"), rtol=2e-3, atol=2e-3)
    assert summary == "2 attentions' heads padded to a multiple of 8 features"
    assert ops(after) == ops(g)
    attn = after.node("attn")
    assert attn.attrs["head_dim"] == 8 and np.isclose(attn.attrs["scale"], 1 / np.sqrt(6))
    assert after.node("attn_io").attrs["scale"] == 0.5
    assert after.node("qkv").attrs["out_features"] == 48
    assert after.tensors["qkv"].shape[-1].value == 48 and after.tensors["attn"].shape[-1].value == 16
    w = after.weights.get(after.node("qkv").weights["weight"]).reshape(3, 2, 8, 12)
    b = after.weights.get(after.node("qkv").weights["bias"]).reshape(3, 2, 8)
    assert not w[:, :, 6:].any() and not b[:, :, 6:].any()
    np.testing.assert_array_equal(w[:, :, :6].reshape(36, 12), g.weights.get("qkv.weight"))
    p = after.weights.get(after.node("proj").weights["weight"]).reshape(12, 2, 8)
    assert not p[:, :, 6:].any()
    io = after.weights.get(after.node("proj_io").weights["weight"]).reshape(2, 8, 5)
    assert not io[:, 6:].any()
    for name in ("attn_two", "attn8"):
        assert after.node(name).attrs == g.node(name).attrs


def test_targets_without_alignment_and_float32_change_nothing():
    assert_unpadded(ATTENTIONS, INPUTS, OUTPUTS, pad_heads.run)
