import pytest

from ait_build.passes import recognize_activations

from .helpers import check_pass, model, node_of, ops

X = "{x: {shape: [batch, 4, 8]}, y: {shape: [batch, 4, 8]}}"
# GPT-2's NewGELUActivation: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
TANH_GELU = """
    - {name: x2, op: mul, inputs: [x, x]}
    - {name: x3, op: mul, inputs: [x2, x]}
    - {name: c, op: mul, inputs: [x3], scalar: 0.044715}
    - {name: s, op: add, inputs: [x, c]}
    - {name: k, op: mul, inputs: [s], scalar: %s}
    - {name: t, op: tanh}
    - {name: one, op: add, scalar: 1.0}
    - {name: half, op: mul, inputs: [x], scalar: 0.5}
    - {name: g, op: mul, inputs: [half, one]}
"""


def test_written_out_tanh_gelu_becomes_gelu():
    g = model(TANH_GELU % 0.7978845608028654 + "    - {name: z, op: softmax, inputs: [g]}",
              X, "[z]")
    after, summary = check_pass(g, recognize_activations.run)
    assert ops(after) == ["gelu", "softmax"]
    gelu = node_of(after, "gelu")
    assert gelu.inputs == ["x"] and gelu.outputs == ["g"] and gelu.attrs["approximate"] == "tanh"
    assert summary == "1 written-out activations recognised"


@pytest.mark.parametrize("graph, op", [
    ("""
        - {name: s, op: sigmoid, inputs: [x]}
        - {name: g, op: mul, inputs: [s, x]}""", "silu"),
    # x * 0.5 * (1 + erf(x / sqrt(2))), another order of the same arithmetic
    ("""
        - {name: r, op: div, inputs: [x], scalar: 1.4142135623730951}
        - {name: e, op: erf}
        - {name: one, op: add, scalar: 1.0}
        - {name: h, op: mul, inputs: [x, one]}
        - {name: g, op: mul, inputs: [h], scalar: 0.5}""", "gelu"),
])
def test_other_spellings_are_recognised_by_value(graph, op):
    g = model(graph + "\n        - {name: z, op: add, inputs: [g, y]}", X, "[z]")
    after, _ = check_pass(g, recognize_activations.run)
    assert ops(after) == [op, "add"]  # the residual add after it stays for the epilogue
    assert node_of(after, op).attrs.get("approximate", "none") == "none"


def test_near_misses_and_shared_intermediates_are_left_alone():
    wrong = model(TANH_GELU % 0.8, X, "[g]")  # not sqrt(2/pi): no activation computes this
    after, summary = check_pass(wrong, recognize_activations.run)
    assert "gelu" not in ops(after) and summary == ""
    shared = model(TANH_GELU % 0.7978845608028654 + "    - {name: z, op: add, inputs: [g, t]}",
                   X, "[z]")  # tanh's value is needed outside the GELU
    after, _ = check_pass(shared, recognize_activations.run)
    assert "gelu" not in ops(after)


def test_two_input_arithmetic_is_not_an_activation():
    g = model("""
        - {name: s, op: sigmoid, inputs: [y]}
        - {name: g, op: mul, inputs: [s, x]}
        """, X, "[g]")
    after, summary = check_pass(g, recognize_activations.run)
    assert ops(after) == ["sigmoid", "mul"] and summary == ""
