from ait_build.passes import eliminate_dead_code

from .helpers import check_pass, model, ops

X = "{x: {shape: [batch, 4, 8]}}"


def test_noops_and_dead_branch_removed():
    g = model("""
        - {name: a, op: identity, inputs: [x]}
        - {name: b, op: mul, inputs: [a], scalar: 1.0}
        - {name: c, op: reshape, inputs: [b], shape: [batch, 4, 8]}
        - {name: d, op: permute, inputs: [c], dims: [0, 1, 2]}
        - {name: unused, op: tanh, inputs: [x]}
        - {name: unused2, op: relu, inputs: [unused]}
        - {name: y, op: sigmoid, inputs: [d]}
        """, X, "[y]")
    after, summary = check_pass(g, eliminate_dead_code.run)
    assert ops(after) == ["sigmoid"]
    assert after.nodes[0].inputs == ["x"]
    assert "unused" not in after.tensors
    assert summary == "4 no-op nodes removed, 2 dead nodes removed"


def test_noop_producing_an_output_keeps_the_output_name():
    g = model("""
        - {name: a, op: relu, inputs: [x]}
        - {name: y, op: add, inputs: [a], scalar: 0.0}
        """, X, "[y]")
    after, _ = check_pass(g, eliminate_dead_code.run)
    assert ops(after) == ["relu"]
    assert after.nodes[0].outputs == ["y"] and after.outputs == ["y"]


def test_copy_of_an_input_stays_and_real_ops_stay():
    g = model("""
        - {name: y, op: identity, inputs: [x]}
        - {name: z, op: mul, inputs: [x], scalar: 2.0}
        - {name: w, op: reshape, inputs: [z], shape: [batch, 32]}
        """, X, "[y, w]")
    after, summary = check_pass(g, eliminate_dead_code.run)
    assert ops(after) == ["identity", "mul", "reshape"]
    assert summary == ""
