import numpy as np
import pytest

from ait_build.passes import plan_memory
from ait_build.ops.reference import random_inputs, run_reference

from .helpers import apply, model, ops, run_in_workspace

X = "{x: {shape: [batch, 8, 16]}}"
CHAIN = """
- {name: a, op: linear, inputs: [x], out_features: 32}
- {name: b, op: relu}
- {name: c, op: reshape, shape: [batch, 256]}
- {name: d, op: sigmoid}
- {name: e, op: reshape, inputs: [d], shape: [batch, 8, 32]}
- {name: f, op: linear, out_features: 16}
- {name: g, op: add, inputs: [f, x]}
- {name: h, op: linear, out_features: 16}
- {name: i, op: mul, inputs: [h, g]}
"""


def check_plan(graph):
    plan = graph.memory_plan
    assert plan.workspace_bytes <= plan.naive_bytes
    assert plan.peak_bytes <= plan.workspace_bytes
    assert all(o % plan.alignment == 0 for o in plan.offsets.values())
    assert all(plan.offsets[t] + plan.sizes[t] <= plan.workspace_bytes for t in plan.offsets)
    for batch in (1, graph.dims["batch"].max):
        inputs = random_inputs(graph, {"batch": batch})
        want = run_reference(graph, inputs)
        got = run_in_workspace(graph, inputs)
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)


def test_chain_reuses_memory_views_and_in_place():
    g = model(CHAIN, X, "[i]")
    after, summary = apply(g, plan_memory.run)
    assert ops(after) == ops(g)  # planning never edits the graph
    plan = after.memory_plan
    assert set(plan.offsets) == {"a", "b", "d", "f", "g", "h"}  # not the output i, nor views
    # relu, sigmoid (through the view c) and the add run in place; reshapes are views
    assert plan.aliases == {"b": "a", "c": "b", "d": "b", "e": "d", "g": "f"}
    assert plan.home("e") == "d" and plan.offsets["d"] == plan.offsets["a"]
    assert plan.sizes["a"] == 4 * 8 * 32 * 4  # batch at its max, 4 bytes per float32
    assert plan.workspace_bytes < plan.naive_bytes
    assert summary.startswith("workspace ") and "3 written in place, 2 views" in summary
    check_plan(after)


def test_in_place_only_when_no_later_reader():
    g = model("""
        - {name: a, op: linear, inputs: [x], out_features: 16}
        - {name: b, op: relu}
        - {name: c, op: add, inputs: [a, b]}
        - {name: d, op: tanh}
        """, X, "[d]")
    after, _ = apply(g, plan_memory.run)
    plan = after.memory_plan
    assert "b" not in plan.aliases  # a is read again by c
    assert plan.aliases["c"] in ("a", "b")
    check_plan(after)


@pytest.mark.parametrize("spec", ["tiny_cnn", "tiny_bert", "tiny_vit"])
def test_seed_graphs_run_correctly_from_one_workspace(spec):
    from ait_build.passes import optimize
    from ait_build.spec.model import load_model

    from .helpers import target
    graph, _ = optimize(load_model(f"specs/{spec}.yaml"), target("cpu"))
    check_plan(graph)


def test_row_ops_and_gemm_residuals_write_over_their_last_use():
    g = model("""
        - {name: a, op: linear, inputs: [x], out_features: 16}
        - {name: b, op: linear, inputs: [a], out_features: 16}
        - {name: c, op: linear, inputs: [b, a], out_features: 16}
        - {name: d, op: layer_norm, inputs: [c, b]}
        - {name: e, op: softmax}
        - {name: f, op: linear, inputs: [e], out_features: 8}
        """, X, "[f]")
    after, _ = apply(g, plan_memory.run)
    # c over its residual a; d over c (b is the norm's residual, also free); e over d
    assert after.memory_plan.aliases == {"c": "a", "d": "c", "e": "d"}
    check_plan(after)
