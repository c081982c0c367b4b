from ait_build.passes import batchnorm_to_affine, fuse_concat, fuse_elementwise

from .helpers import check_pass, model, ops

IMGS = "{a: {shape: [batch, 4, 3, 16]}, b: {shape: [batch, 4, 3, 8]}}"


def prepared(graph_text: str, outputs: str):
    g = model(graph_text, IMGS, outputs)
    g, _ = check_pass(g, batchnorm_to_affine.run)
    g, _ = check_pass(g, fuse_elementwise.run)
    return g


def test_concat_into_norm_and_relu_is_one_node():
    g = prepared("""
        - {name: cat, op: concat, inputs: [a, b, a], axis: 3}
        - {name: bn, op: batch_norm}
        - {name: act, op: relu}
        """, "[act]")
    after, summary = check_pass(g, fuse_concat.run)
    assert summary == "1 concats fused with the elementwise program after them"
    assert ops(after) == ["parameter", "parameter", "concat_elementwise"]
    node = after.node("act")
    assert node.inputs == ["a", "b", "a", "bn.scale", "bn.shift"] and node.attrs["pieces"] == 3
    assert node.attrs["program"] == (("mul", ("x0", "x1"), ()), ("add", ("t0", "x2"), ()),
                                     ("relu", ("t1",), ()))


def test_a_lone_elementwise_reader_fuses_too():
    g = model("""
        - {name: cat, op: concat, inputs: [b, a], axis: -1}
        - {name: act, op: relu6}
        """, IMGS, "[act]")
    after, _ = check_pass(g, fuse_concat.run)
    assert ops(after) == ["concat_elementwise"]
    assert after.node("act").attrs["program"] == (("relu6", ("x0",), ()),)


def test_fused_only_where_valid():
    g = prepared("""
        - {name: cat, op: concat, inputs: [a, b], axis: 3}
        - {name: bn, op: batch_norm}
        - {name: act, op: relu}
        - {name: rows, op: concat, inputs: [a, a], axis: 1}
        - {name: rows_act, op: relu}
        - {name: cat2, op: concat, inputs: [a, b], axis: 3}
        - {name: both, op: add, inputs: [cat2, cat2]}
        - {name: cat3, op: concat, inputs: [a, b], axis: 3}
        - {name: by_pixel, op: add, inputs: [cat3, cat2]}
        """, "[cat, act, rows_act, both, by_pixel]")
    after, summary = check_pass(g, fuse_concat.run)
    # cat is an output, rows joins another axis, cat2 is read twice, cat3's program reads a
    # full tensor besides it
    assert summary == "" and ops(after).count("concat") == 4
