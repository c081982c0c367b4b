import numpy as np
import pytest

from ait_build.errors import OpError
from ait_build.ops.opdef import TType
from ait_build.ops.registry import get_op
from ait_build.ir.dims import Dim
from ait_build.passes import fuse_elementwise

from .helpers import check_pass, model, node_of, ops

X = "{x: {shape: [batch, 4, 8]}, m: {shape: [batch, 8], dtype: int64}}"


def test_written_out_gelu_dag_becomes_one_op():
    # 0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x^3)))
    g = model("""
        - {name: x2, op: mul, inputs: [x, x]}
        - {name: x3, op: mul, inputs: [x2, x]}
        - {name: c, op: mul, inputs: [x3], scalar: 0.044715}
        - {name: s, op: add, inputs: [x, c]}
        - {name: k, op: mul, inputs: [s], scalar: 0.7978845608}
        - {name: t, op: tanh}
        - {name: one, op: add, scalar: 1.0}
        - {name: half, op: mul, inputs: [x], scalar: 0.5}
        - {name: y, op: mul, inputs: [half, one]}
        - {name: z, op: softmax, inputs: [y]}
        """, X, "[z]")
    after, summary = check_pass(g, fuse_elementwise.run)
    fused = node_of(after, "fused_elementwise")
    assert ops(after) == ["fused_elementwise", "softmax"]
    assert fused.inputs == ["x"] and fused.outputs == ["y"] and len(fused.attrs["program"]) == 9
    assert fused.attrs["program"][2] == ("mul", ("t1",), (("scalar", 0.044715),))
    assert summary == "1 elementwise groups fused (9 ops)"


def test_mask_chain_fuses_but_reshape_and_shared_values_split_groups():
    g = model("""
        - {name: f, op: cast, inputs: [m], dtype: float32}
        - {name: shift, op: sub, scalar: 1.0}
        - {name: bias, op: mul, scalar: 10000.0}
        - {name: bias4, op: reshape, shape: [batch, 1, 8]}
        - {name: a, op: relu, inputs: [x]}
        - {name: b, op: add, inputs: [a, bias4]}
        - {name: c, op: sigmoid, inputs: [b]}
        - {name: d, op: mul, inputs: [c, a]}
        """, X, "[d, c]")
    after, _ = check_pass(g, fuse_elementwise.run)
    # c is a graph output and a has a reader outside any group: both end a group
    assert ops(after) == ["fused_elementwise", "reshape", "relu", "fused_elementwise", "mul"]
    mask, tail = [n for n in after.nodes if n.op == "fused_elementwise"]
    assert mask.inputs == ["m"] and [s[0] for s in mask.attrs["program"]] == ["cast", "sub", "mul"]
    assert tail.inputs == ["a", "bias4"] and tail.outputs == ["c"]
    assert tail.attrs["program"] == (("add", ("x0", "x1"), ()), ("sigmoid", ("t0",), ()))


def test_smaller_producers_stay_out_of_a_larger_group():
    g = model("""
        - {name: v, op: tanh, inputs: [m8]}
        - {name: w, op: mul, inputs: [v], scalar: 3.0}
        - {name: y, op: add, inputs: [x, w]}
        - {name: z, op: relu}
        """, "{x: {shape: [batch, 4, 8]}, m8: {shape: [batch, 1, 8]}}", "[z]")
    after, _ = check_pass(g, fuse_elementwise.run)
    assert ops(after) == ["fused_elementwise", "fused_elementwise"]
    small, big = after.nodes
    assert small.outputs == ["w"] and big.inputs == ["x", "w"]


def test_fused_reference_and_errors():
    row = get_op("fused_elementwise")
    program = (("add", ("x0", "x1"), ()), ("gelu", ("t0",), (("approximate", "tanh"),)))
    a, b = np.linspace(-2, 2, 8, dtype=np.float32), np.float32(0.5)
    (out,) = row.reference({"program": program}, [a, np.full(8, b)], {})
    ref = get_op("gelu").reference({"approximate": "tanh"}, [a + b], {})[0]
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    t = TType((Dim.of(8),), "float32")
    with pytest.raises(OpError, match="not defined yet"):
        row.infer_types({"program": (("relu", ("t3",), ()),)}, [t], "float32")
    with pytest.raises(OpError, match="not a plain elementwise op"):
        row.infer_types({"program": (("softmax", ("x0",), ()),)}, [t], "float32")
