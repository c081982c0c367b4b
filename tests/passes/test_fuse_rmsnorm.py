import numpy as np
import pytest

from ait_build.passes import fuse_rmsnorm

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
