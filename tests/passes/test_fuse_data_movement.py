"""fuse_data_movement: which chains become one strided_copy, where they are cut, and, over random
chains of permutes, slices, pads, reshapes and split outputs, that the view the kernels run
(ops/strided_view.py, merged as the lowering merges it) gives what the unfused ops give."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ait_build.ir.dims import Dim
from ait_build.ops import strided_view
from ait_build.ops.reference import random_inputs, run_reference
from ait_build.passes import fuse_data_movement

from .helpers import check_pass, load_text, model, ops

SHUFFLE = """
- {name: cat, op: concat, inputs: [a, b], axis: 3}
- {name: view, op: reshape, shape: [batch, 3, 4, 2, 10]}
- {name: perm, op: permute, dims: [0, 1, 2, 4, 3]}
- {name: flat, op: reshape, shape: [batch, 3, 4, 20]}
- {name: halves, op: split, axis: 3, sizes: [10, 10]}
- {name: left, op: relu, inputs: ["halves:0"]}
- {name: right, op: pad, inputs: ["halves:1"], pads: [0, 0, 0, 0, 0, 0, 0, 6]}
"""
AB = "{a: {shape: [batch, 3, 4, 10]}, b: {shape: [batch, 3, 4, 10]}}"


def fused(graph) -> dict:
    return {n.output: [s[0] for s in n.attrs["steps"]] for n in graph.nodes
            if n.op == "strided_copy"}


def test_channel_shuffle_split_and_pad_become_one_copy_per_half():
    g = model(SHUFFLE, AB, "[left, right]")
    after, summary = check_pass(g, fuse_data_movement.run)
    assert ops(after) == ["strided_copy", "relu", "strided_copy"]
    assert fused(after) == {"halves:0": ["reshape", "permute", "reshape", "slice"],
                            "right": ["reshape", "permute", "reshape", "slice", "pad"]}
    # each half reads the concat's pieces: the concat is not written
    assert all(n.inputs == ["a", "b"] and n.attrs["concat_axis"] == 3
               for n in after.nodes if n.op == "strided_copy")
    assert summary == ("2 chains of 5 data-movement ops -> strided copies, "
                       "1 concats read piece by piece")
    right = after.node("right")
    view = strided_view.compose(g.tensors["cat"].shape, right.attrs["steps"])
    # channel j of the padded half reads cat channel (10 + j) // 2 + 10 * (j % 2): outer axis
    # of 8 pairs (5 in range), inner axis of the 2 groups; the first pair starts at channel 5
    assert [(a.size, a.stride, a.lo, a.hi) for a in strided_view.merged(view.axes)] == \
        [(Dim.of("batch") * 12, 20, None, None), (8, 1, 0, 5), (2, 10, None, None)]
    assert view.base == 5 and view.value == 0.0


def test_a_concat_read_elsewhere_is_written_and_the_chains_read_it():
    after, summary = check_pass(model(SHUFFLE, AB, "[left, right, cat]"), fuse_data_movement.run)
    assert ops(after) == ["concat", "strided_copy", "relu", "strided_copy"]
    assert all(n.inputs == ["cat"] and "concat_axis" not in n.attrs
               for n in after.nodes if n.op == "strided_copy")
    assert summary == "2 chains of 5 data-movement ops -> strided copies"


def test_a_value_read_elsewhere_cuts_the_chain_there():
    graph = """
    - {name: t, op: permute, inputs: [x], dims: [0, 2, 1]}
    - {name: cols, op: slice, axis: 2, start: 1, end: 5}
    - {name: out, op: pad, pads: [0, 0, 1, 1, 0, 0]}
    - {name: side, op: relu, inputs: [t]}
    """
    after, _ = check_pass(model(graph, "{x: {shape: [batch, 6, 7]}}", "[out, side]"),
                          fuse_data_movement.run)
    assert ops(after) == ["permute", "strided_copy", "relu"]
    assert after.node("out").inputs == ["t"] and fused(after) == {"out": ["slice", "pad"]}
    # the same chain with the permute's output a graph output
    after, _ = check_pass(model(graph.replace("- {name: side, op: relu, inputs: [t]}", ""),
                                "{x: {shape: [batch, 6, 7]}}", "[out, t]"), fuse_data_movement.run)
    assert ops(after) == ["permute", "strided_copy"]


def test_a_reshape_that_is_no_strided_view_is_left_alone():
    # [12, 6] swapped to [6, 12] and flattened is two axes; cutting 72 into [8, 9] splits the
    # outer one mid-way: no view, so neither the permute nor the reshapes are fused
    graph = """
    - {name: swap, op: permute, inputs: [s], dims: [0, 2, 1]}
    - {name: flat, op: reshape, shape: [batch, 72]}
    - {name: odd, op: reshape, shape: [batch, 8, 9]}
    - {name: cols, op: slice, axis: 2, start: 0, end: 4}
    """
    g = model(graph, "{s: {shape: [batch, 12, 6]}}", "[cols]")
    after, summary = check_pass(g, fuse_data_movement.run)
    assert ops(after) == ["permute", "reshape", "reshape", "slice"] and summary == ""


def test_lone_copies_and_reshapes_keep_their_nodes():
    graph = """
    - {name: t, op: permute, inputs: [x], dims: [0, 2, 1]}
    - {name: r, op: reshape, shape: [batch, 42]}
    - {name: r2, op: reshape, inputs: [x], shape: [batch, 7, 6]}
    - {name: r3, op: reshape, shape: [batch, 42]}
    """
    g = model(graph, "{x: {shape: [batch, 6, 7]}}", "[r, r3]")
    after, summary = check_pass(g, fuse_data_movement.run)
    assert ops(after) == ops(g) and summary == ""


def test_pads_of_two_values_are_two_passes():
    graph = """
    - {name: p1, op: pad, inputs: [x], pads: [0, 0, 1, 0], value: 1.0}
    - {name: p2, op: pad, pads: [0, 0, 0, 1], value: 2.0}
    - {name: t, op: transpose, dim0: 0, dim1: 1}
    """
    after, _ = check_pass(model(graph, "{x: {shape: [3, 4]}}", "[t]", dims="{}"),
                          fuse_data_movement.run)
    assert ops(after) == ["pad", "strided_copy"] and fused(after) == {"t": ["pad", "permute"]}


# -- random chains ------------------------------------------------------------------------------

def view_gather(view, axes, xs: list, axis, shape) -> np.ndarray:
    """What a kernel computes: out (row-major over `axes`) = x.flat[base + sum i * stride] where
    every index is in range, the pad value elsewhere; x is the concat of `xs` along `axis` (when
    not None), read as the kernel does: an offset is a row of the concat and a place in it."""
    sizes = [a.size.value for a in axes]
    index = np.indices(sizes) if sizes else np.zeros((0,), int)
    offset = np.full(sizes, view.base.value, dtype=np.int64)
    inside = np.ones(sizes, bool)
    for k, a in enumerate(axes):
        offset = offset + index[k] * a.stride.value
        if not a.full:
            inside &= (index[k] >= a.lo) & (index[k] < a.hi)
    offset = np.where(inside, offset, 0)
    if axis is None:
        values = xs[0].reshape(-1)[offset]
    else:
        widths = [int(np.prod(x.shape[axis:])) for x in xs]
        row, at = np.divmod(offset, sum(widths))
        values = np.zeros(sizes, np.float32)
        first = 0
        for x, width in zip(xs, widths):
            mine = (at >= first) & (at < first + width)
            values[mine] = x.reshape(-1)[(row * width + at - first)[mine]]
            first += width
    return np.where(inside, values, np.float32(view.value or 0.0)).reshape(shape)


def factor_pairs(n: int) -> list:
    return [(a, n // a) for a in range(2, n) if n % a == 0]


@st.composite
def chains(draw):
    shape = draw(st.lists(st.integers(1, 5), min_size=2, max_size=4))
    in_shapes = {"x": list(shape)}
    entries, outputs, last, value = [], [], "x", draw(st.sampled_from([0.0, -1.5]))
    if draw(st.booleans()):  # the chain starts at a concat of two inputs
        axis = draw(st.integers(0, len(shape) - 1))
        extra = draw(st.integers(1, 3))
        in_shapes["y"] = shape[:axis] + [extra] + shape[axis + 1:]
        entries.append(dict(name="cat", op="concat", inputs=["x", "y"], axis=axis))
        shape[axis] += extra
        last = "cat"
    for i in range(draw(st.integers(2, 6))):
        name, rank = f"n{i}", len(shape)
        kind = draw(st.sampled_from(["permute", "slice", "pad", "reshape", "split"]))
        if kind == "permute":
            dims = draw(st.permutations(range(rank)))
            entries.append(dict(name=name, op="permute", inputs=[last], dims=list(dims)))
            shape = [shape[d] for d in dims]
        elif kind == "slice":
            axis = draw(st.integers(0, rank - 1))
            start = draw(st.integers(0, shape[axis] - 1))
            step = draw(st.integers(1, 2))
            end = draw(st.integers(start + 1, shape[axis]))
            entries.append(dict(name=name, op="slice", inputs=[last], axis=axis, start=start,
                                end=end, step=step))
            shape[axis] = len(range(start, end, step))
        elif kind == "pad":
            pads = [draw(st.integers(0, 2)) if draw(st.booleans()) else 0 for _ in range(2 * rank)]
            # mostly one value per chain (composes), sometimes another (cuts)
            v = value if draw(st.integers(0, 3)) else 2.5
            entries.append(dict(name=name, op="pad", inputs=[last], pads=pads, value=v))
            shape = [d + pads[2 * k] + pads[2 * k + 1] for k, d in enumerate(shape)]
        elif kind == "reshape":
            axis = draw(st.integers(0, rank - 1))
            pairs = factor_pairs(shape[axis])
            if rank > 1 and (not pairs or draw(st.booleans())):  # merge two neighbours
                axis = min(axis, rank - 2)
                shape = shape[:axis] + [shape[axis] * shape[axis + 1]] + shape[axis + 2:]
            elif pairs:
                a, b = draw(st.sampled_from(pairs))
                shape = shape[:axis] + [a, b] + shape[axis + 1:]
            entries.append(dict(name=name, op="reshape", inputs=[last], shape=list(shape)))
        else:
            axis = draw(st.integers(0, rank - 1))
            if shape[axis] < 2:
                continue
            cut = draw(st.integers(1, shape[axis] - 1))
            entries.append(dict(name=name, op="split", inputs=[last], axis=axis,
                                sizes=[cut, shape[axis] - cut]))
            keep = draw(st.integers(0, 1))
            outputs.append(f"{name}:{1 - keep}")
            name, shape[axis] = f"{name}:{keep}", [cut, shape[axis] - cut][keep]
        last = name
    return in_shapes, entries, outputs + [last]


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(chains())
def test_random_chains_fuse_into_views_that_match_the_ops(chain):
    in_shapes, entries, outputs = chain
    assume(entries)
    inputs = ", ".join(f"{k}: {{shape: {json.dumps(v)}}}" for k, v in in_shapes.items())
    text = ("apiVersion: ait-build/v1\nkind: Model\nname: chain\ndtype: float32\n"
            f"inputs: {{{inputs}}}\n"
            "weights: {random: {seed: 0}}\n"
            f"graph: {json.dumps(entries)}\noutputs: {json.dumps(outputs)}\n")
    g = load_text(text)
    after, _ = check_pass(g, fuse_data_movement.run)
    inputs = random_inputs(g, {}, seed=1)
    values = run_reference(after, inputs, keep_all=True)
    for node in after.nodes:
        if node.op != "strided_copy":
            continue
        assert any(op != "reshape" for op, _, _ in node.attrs["steps"])
        xs = [values[t] for t in node.inputs]
        axis = node.attrs.get("concat_axis")
        joined = xs[0] if axis is None else np.concatenate(xs, axis)
        view = strided_view.compose(joined.shape, node.attrs["steps"])
        want = values[node.output]
        for axes in (view.axes, strided_view.merged(view.axes)):
            np.testing.assert_array_equal(view_gather(view, axes, xs, axis, want.shape), want)
