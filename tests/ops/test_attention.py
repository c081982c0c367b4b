"""multi_head_attention: softmax(q k^T * scale + bias) v per head, separate or packed q/k/v."""

import math

import numpy as np
import pytest

from .helpers import out_types, rand, run1, spec_error

F32 = np.float32
LN3 = math.log(3)


def t(*rows):
    """A [1, seq, features] tensor from rows."""
    return np.array(rows, F32)[None]


def mha(tmp_path, q, k, v, bias=None, **attrs):
    arrays = {"q": q, "k": k, "v": v}
    if bias is not None:
        arrays["bias"] = bias
    return run1(tmp_path, "multi_head_attention", arrays, **attrs)


def test_scores_are_scaled_dot_products(tmp_path):
    q, k, v = t([1.0]), t([0.0], [LN3]), t([4.0], [8.0])
    # scale 1/sqrt(1): weights softmax([0, ln 3]) = [1/4, 3/4]
    np.testing.assert_allclose(mha(tmp_path, q, k, v, num_heads=1, head_dim=1),
                               t([4 / 4 + 8 * 3 / 4]), rtol=1e-6)
    # scale 2: softmax([0, 2 ln 3]) = [1/10, 9/10]
    np.testing.assert_allclose(mha(tmp_path, q, k, v, num_heads=1, head_dim=1, scale=2),
                               t([0.4 + 7.2]), rtol=1e-6)


def test_heads_are_independent(tmp_path):
    # head 0 prefers key 1 (weights 1/4, 3/4), head 1 prefers key 0 (3/4, 1/4)
    q, k, v = t([1.0, 1.0]), t([0.0, 0.0], [LN3, -LN3]), t([10.0, 100.0], [20.0, 200.0])
    out = mha(tmp_path, q, k, v, num_heads=2, head_dim=1)
    np.testing.assert_allclose(out, t([10 / 4 + 20 * 3 / 4, 100 * 3 / 4 + 200 / 4]), rtol=1e-6)


@pytest.mark.parametrize("masked", [-np.inf, -10000.0])  # BERT's padding mask uses -10000
def test_bias_masks_a_key_completely(tmp_path, masked):
    q, k, v = t([1.0, 2.0]), t([5.0, 5.0], [0.0, 0.0]), t([1.0, 2.0], [30.0, 40.0])
    bias = np.array([0.0, masked], F32).reshape(1, 1, 1, 2)  # [batch, heads, seq_q, seq_k]
    out = mha(tmp_path, q, k, v, bias=bias, num_heads=1, head_dim=2)
    np.testing.assert_array_equal(out, t([1.0, 2.0]))  # only key 0 is seen


def test_padding_mask_broadcasts_per_batch(tmp_path):
    q = np.zeros((2, 1, 1), F32)
    k, v = np.zeros((2, 3, 1), F32), np.array([[1, 2, 3], [1, 2, 3]], F32)[..., None]
    bias = np.array([[0, 0, 0], [0, 0, -np.inf]], F32).reshape(2, 1, 1, 3)  # batch 1 pads key 2
    out = mha(tmp_path, q, k, v, bias=bias, num_heads=1, head_dim=1)
    np.testing.assert_allclose(out.ravel(), [2.0, 1.5], rtol=1e-6)


def test_causal_query_sees_only_earlier_keys(tmp_path):
    q, k = np.zeros((1, 3, 1), F32), np.zeros((1, 3, 1), F32)  # uniform scores
    v = t([1.0], [2.0], [6.0])
    out = mha(tmp_path, q, k, v, num_heads=1, head_dim=1, causal=True)
    np.testing.assert_allclose(out, t([1.0], [1.5], [3.0]), rtol=1e-6)  # running means


def test_packed_equals_separate(tmp_path):
    q, k, v = rand(2, 5, 8, seed=1), rand(2, 5, 8, seed=2), rand(2, 5, 8, seed=3)
    bias = rand(2, 1, 1, 5, seed=4)
    attrs = dict(num_heads=2, head_dim=4, causal=True)
    separate = mha(tmp_path, q, k, v, bias=bias, **attrs)
    packed = run1(tmp_path, "multi_head_attention",
                  {"qkv": np.concatenate([q, k, v], -1), "bias": bias}, packed=True, **attrs)
    np.testing.assert_array_equal(packed, separate)  # the same float operations


def test_output_shape(tmp_path):
    dims = {"batch": 4, "seq": 128, "kv": 64}
    got = out_types(tmp_path, "multi_head_attention",
                    {"qkv": ["batch", "seq", 96]}, model_dims=dims, num_heads=4, head_dim=8,
                    packed=True)
    assert got == [(["batch", "seq", 32], "float32")]
    # cross attention: seq_k may differ from seq_q
    got = out_types(tmp_path, "multi_head_attention",
                    {"q": ["batch", "seq", 32], "k": ["batch", "kv", 32], "v": ["batch", "kv", 32],
                     "b": ["batch", 1, 1, "kv"]}, model_dims=dims, num_heads=4, head_dim=8)
    assert got == [(["batch", "seq", 32], "float32")]


# -- errors -------------------------------------------------------------------------------------

Q = [2, 5, 8]
QKV = {"q": Q, "k": Q, "v": Q}
HEADS = {"num_heads": 2, "head_dim": 4}


@pytest.mark.parametrize("inputs, attrs, match", [
    ({"q": [2, 5, 6], "k": Q, "v": Q}, HEADS, r"\[2, 5, 6\] has 6 features; num_heads\*head_dim = 8"),
    ({"qkv": [2, 5, 8]}, dict(HEADS, packed=True), r"num_heads\*head_dim\*3 = 24"),
    ({"q": Q}, HEADS, "expects 3 input.*set 'packed: true'"),
    ({"q": Q, "k": [2, 5, 8], "v": [2, 6, 8]}, HEADS, "k .* and v .* must match"),
    ({"q": Q, "k": [3, 5, 8], "v": [3, 5, 8]}, HEADS, "share q's batch 2"),
    ({"q": [2, 8], "k": [2, 8], "v": [2, 8]}, HEADS, r"must be \[batch, seq, features\]"),
    (dict(QKV, b=[2, 2, 5, 4]), HEADS, r"bias \[2, 2, 5, 4\] does not broadcast to .* \[2, 2, 5, 5\]"),
    (dict(QKV, b=[1, 2, 1, 5, 5]), HEADS, "does not broadcast"),
    (dict(QKV, b=([2, 1, 1, 5], "int32")), HEADS, "different dtypes"),
    ({"q": Q, "k": [2, 6, 8], "v": [2, 6, 8]}, dict(HEADS, causal=True),
     "causal attention needs seq_q == seq_k, got 5 and 6"),
    ({"q": ([2, 5, 8], "int32"), "k": ([2, 5, 8], "int32"), "v": ([2, 5, 8], "int32")}, HEADS,
     "float tensor"),
    (QKV, {"num_heads": 0, "head_dim": 4}, "num_heads and head_dim must be >= 1"),
    ({"q": [2, 5, "f"], "k": Q, "v": Q}, HEADS, "feature dim must be static"),
])
def test_errors(tmp_path, inputs, attrs, match):
    spec_error(tmp_path, "multi_head_attention", inputs, match, model_dims={"f": 8}, **attrs)


# -- against PyTorch ----------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("causal, with_bias, packed", [
    (False, False, False), (False, True, False), (True, False, True), (True, True, True)])
def test_vs_torch_sdpa(tmp_path, causal, with_bias, packed):
    torch = pytest.importorskip("torch")
    b, s, h, d = 2, 7, 3, 16
    q, k, v = (rand(b, s, h * d, seed=i) for i in range(3))
    bias = rand(b, 1, s, s, seed=3) if with_bias else None
    attrs = dict(num_heads=h, head_dim=d, causal=causal)
    if packed:
        arrays = {"qkv": np.concatenate([q, k, v], -1)}
        if with_bias:
            arrays["bias"] = bias
        out = run1(tmp_path, "multi_head_attention", arrays, packed=True, **attrs)
    else:
        out = mha(tmp_path, q, k, v, bias=bias, **attrs)

    def heads(x):
        return torch.from_numpy(x).reshape(b, s, h, d).transpose(1, 2)
    mask = torch.from_numpy(bias) if with_bias else None
    if causal and with_bias:  # SDPA takes one or the other: fold the causal mask into the bias
        mask = mask.masked_fill(~torch.ones(s, s, dtype=torch.bool).tril(), -math.inf)
    ref = torch.nn.functional.scaled_dot_product_attention(
        heads(q), heads(k), heads(v), attn_mask=mask, is_causal=causal and not with_bias)
    ref = ref.transpose(1, 2).reshape(b, s, h * d).numpy()
    # float32 dot products over d = 16 and a weighted sum over s = 7 keys on both sides, in
    # different orders: differences of a few ulps of O(1) values
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_rotary_embedding_turns_each_pair_of_halves(tmp_path):
    """x * cos + rotate_half(x) * sin: feature i pairs with i + d/2; an angle of pi/2 turns
    (a, b) into (-b, a), an angle of 0 keeps it; cos and sin broadcast over heads."""
    x = np.array([[[[1.0, 2.0, 3.0, 4.0]], [[1.0, 2.0, 3.0, 4.0]]]], F32)  # [1, 2 pos, 1 head, 4]
    angles = np.array([0.0, math.pi / 2], F32)[None, :, None, None] * np.ones(4, F32)
    out = run1(tmp_path, "rotary_embedding",
               {"x": x, "cos": np.cos(angles), "sin": np.sin(angles)})
    np.testing.assert_allclose(out[0, 0, 0], [1, 2, 3, 4], atol=1e-6)
    np.testing.assert_allclose(out[0, 1, 0], [-3, -4, 1, 2], atol=1e-6)


def test_rotary_embedding_refuses_odd_or_growing_shapes(tmp_path):
    spec_error(tmp_path, "rotary_embedding", {"x": [2, 5], "cos": [2, 5], "sin": [2, 5]},
               "rotates halves of the last dim, got 5")
    spec_error(tmp_path, "rotary_embedding", {"x": [2, 4], "cos": [3, 4], "sin": [2, 4]},
               "cos .* does not broadcast to x")
