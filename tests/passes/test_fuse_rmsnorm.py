import numpy as np
import pytest

from ait_build.passes import fuse_rmsnorm

from ait_build.ops.reference import run_reference

from .helpers import check_pass, model, node_of, ops

X = "{x: {shape: [batch, 5, 16]}}"


def written_out(x: str = "x", square_of: str = "x", rows: str = "[-1, 16, 1, 1]",
                inverse: bool = True) -> str:
    """An RMS norm as the importer writes T5's T5LayerNorm: the mean of the last dim as a
    reshape, a global average pool and a reshape back; rsqrt as 1 / sqrt."""
    scale = """
        - {name: one, op: constant, shape: [1, 1, 1], value: 1.0}
        - {name: inv, op: div, inputs: [one, root]}
        - {name: normed, op: mul, inputs: [%s, inv]}""" % x if inverse else """
        - {name: normed, op: div, inputs: [%s, root]}""" % x
    return f"""
        - {{name: square, op: mul, inputs: [{square_of}, {square_of}]}}
        - {{name: rows, op: reshape, inputs: [square], shape: {rows}}}
        - {{name: pooled, op: global_avg_pool, inputs: [rows]}}
        - {{name: mean, op: reshape, inputs: [pooled], shape: [batch, 5, 1]}}
        - {{name: shifted, op: add, inputs: [mean], scalar: 1.0e-6}}
        - {{name: root, op: sqrt, inputs: [shifted]}}{scale}"""


def test_t5_norm_with_its_weight_becomes_one_rms_norm():
    g = model(written_out() + """
        - {name: gain, op: parameter, shape: [1, 1, 16]}
        - {name: y, op: mul, inputs: [gain, normed]}
        """, X, "[y]")
    after, summary = check_pass(g, fuse_rmsnorm.run, dims={"batch": 3})
    assert summary == "1 RMS norms fused" and ops(after) == ["rms_norm"]
    norm = node_of(after, "rms_norm")
    assert norm.inputs == ["x"] and norm.outputs == ["y"]
    assert norm.attrs["eps"] == pytest.approx(1e-6)
    np.testing.assert_array_equal(after.weights.get(norm.weights["weight"]),
                                  g.weights.get(node_of(g, "parameter").weights["value"]).reshape(16))


def test_division_by_the_root_without_a_weight():
    g = model(written_out(inverse=False) + """
        - {name: y, op: relu, inputs: [normed]}
        """, X, "[y]")
    after, summary = check_pass(g, fuse_rmsnorm.run, dims={"batch": 2})
    assert summary == "1 RMS norms fused" and ops(after) == ["rms_norm", "relu"]
    assert node_of(after, "rms_norm").attrs["affine"] is False


@pytest.mark.parametrize("case", ["other_square", "other_axis", "mean_read_too"])
def test_what_is_not_an_rms_norm_stays(case):
    outputs = "[normed]"
    if case == "other_square":  # the squares of another tensor than the one scaled
        g_text = "\n        - {name: z, op: relu, inputs: [x]}" + written_out(square_of="z")
    elif case == "other_axis":  # the mean over the middle axis, not the last
        g_text = written_out(rows="[-1, 5, 1, 16]").replace("shape: [batch, 5, 1]",
                                                            "shape: [batch, 1, 16]")
    else:  # the mean is an output too: it must stay
        g_text, outputs = written_out(), "[normed, mean]"
    g = model(g_text, X, outputs)
    after, summary = check_pass(g, fuse_rmsnorm.run, dims={"batch": 2})
    assert summary == "" and "rms_norm" not in ops(after)


def l2_normalized(clamp: bool = True, permuted: bool = False, times: str = "16.0") -> str:
    """F.normalize(x, dim=-1) as the importer writes it: the norm as the root of the mean of the
    squares times C, clamped below by eps and expanded; Swin V2 squares q before its head
    permute and divides the permuted q."""
    x = "xp" if permuted else "x"
    perm = """
        - {name: xp, op: permute, inputs: [x], dims: [1, 0, 2]}
        - {name: squares, op: mul, inputs: [x, x]}
        - {name: square, op: permute, inputs: [squares], dims: [1, 0, 2]}""" if permuted else """
        - {name: square, op: mul, inputs: [x, x]}"""
    shape = "[5, batch, 1]" if permuted else "[batch, 5, 1]"
    floor = """
        - {name: floor, op: clamp, inputs: [norm], min: 1.0e-12}
        - {name: wide, op: expand, inputs: [floor], shape: [-1, -1, 16]}""" if clamp else """
        - {name: wide, op: expand, inputs: [norm], shape: [-1, -1, 16]}"""
    return f"""{perm}
        - {{name: rows, op: reshape, inputs: [square], shape: [-1, 16, 1, 1]}}
        - {{name: pooled, op: global_avg_pool, inputs: [rows]}}
        - {{name: mean, op: reshape, inputs: [pooled], shape: {shape}}}
        - {{name: total, op: mul, inputs: [mean], scalar: {times}}}
        - {{name: norm, op: sqrt, inputs: [total]}}{floor}
        - {{name: normed, op: div, inputs: [{x}, wide]}}"""


@pytest.mark.parametrize("clamp, permuted", [(True, False), (False, False), (True, True)])
def test_l2_normalization_becomes_an_rms_norm(clamp, permuted):
    g = model(l2_normalized(clamp, permuted), X, "[normed]")
    after, summary = check_pass(g, fuse_rmsnorm.run, dims={"batch": 3})
    assert summary == "1 L2 normalizations fused"
    assert ops(after) == (["rms_norm", "permute"] if permuted else ["rms_norm"])
    norm = node_of(after, "rms_norm")
    assert norm.inputs == ["x"] and norm.attrs["eps"] == pytest.approx(1e-24 / 16 if clamp else 0)
    np.testing.assert_allclose(after.weights.get(norm.weights["weight"]), np.full(16, 0.25))
    if clamp:  # a zero row stays zero (x / max(0, eps) = 0), as F.normalize gives
        zero = {"x": np.zeros((2, 5, 16), np.float32)}
        assert not np.any(run_reference(after, zero)["normed"])


@pytest.mark.parametrize("case", ["times_other", "numerator_other", "clamp_above"])
def test_what_is_not_an_l2_normalization_stays(case):
    text = {"times_other": l2_normalized(times="8.0"),  # not the sum of the squares
            "numerator_other": l2_normalized(permuted=True).replace(  # divides another tensor
                "{name: xp, op: permute, inputs: [x], dims: [1, 0, 2]}",
                "{name: z, op: relu, inputs: [x]}\n        "
                "- {name: xp, op: permute, inputs: [z], dims: [1, 0, 2]}"),
            "clamp_above": l2_normalized().replace("min: 1.0e-12", "min: 1.0e-12, max: 3.0"),
            }[case]
    after, summary = check_pass(model(text, X, "[normed]"), fuse_rmsnorm.run, dims={"batch": 2})
    assert summary == "" and "rms_norm" not in ops(after)
