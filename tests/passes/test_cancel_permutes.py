import pytest

from ait_build.passes import cancel_permutes

from .helpers import check_pass, model, node_of, ops

X = "{x: {shape: [batch, 5, 16]}}"


def around(after_dims: str = "[1, 0, 2]", before_dims: str = "[1, 0, 2]") -> str:
    return f"""
        - {{name: seq_first, op: permute, inputs: [x], dims: {before_dims}}}
        - {{name: proj, op: linear, out_features: 8}}
        - {{name: back, op: permute, dims: {after_dims}}}
        - {{name: y, op: relu}}
        """


def test_permutes_around_a_linear_cancel():
    after, summary = check_pass(model(around(), X, "[y]"), cancel_permutes.run, dims={"batch": 3})
    assert summary == "1 permute pairs around a linear cancelled"
    assert ops(after) == ["linear", "relu"]
    assert node_of(after, "linear").inputs == ["x"] and node_of(after, "relu").inputs == ["back"]


@pytest.mark.parametrize("case", ["not_inverse", "moves_last_axis", "read_elsewhere"])
def test_what_does_not_cancel(case):
    text, outputs, x = around(), "[y]", X
    if case == "not_inverse":
        text, x = around(after_dims="[0, 2, 1]"), X
    elif case == "moves_last_axis":  # the linear would see other rows
        text, x = around(before_dims="[0, 2, 1]", after_dims="[0, 2, 1]"), \
            "{x: {shape: [batch, 16, 16]}}"
    else:  # the linear's permuted output is needed too
        outputs = "[y, proj]"
    after, summary = check_pass(model(text, x, outputs), cancel_permutes.run, dims={"batch": 2})
    assert summary == "" and ops(after).count("permute") == 2
