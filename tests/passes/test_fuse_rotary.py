import pytest

from ait_build.passes import fuse_rotary

from .helpers import check_pass, model, ops

INPUTS = ("{x: {shape: [batch, 5, 4, 8]}, cos: {shape: [1, 5, 1, 8]}, "
          "sin: {shape: [1, 5, 1, 8]}}")


def rope(products: str = "[x, cos]|[rot, sin]", halves=("0", "4", "4", "null"),
         concat: str = "[neg, first]") -> str:
    """transformers' apply_rotary_pos_emb as the importer writes it for one of q or k."""
    plain, turned = products.split("|")
    return f"""
        - {{name: first, op: slice, inputs: [x], axis: 3, start: {halves[0]}, end: {halves[1]}}}
        - {{name: second, op: slice, inputs: [x], axis: -1, start: {halves[2]}, end: {halves[3]}}}
        - {{name: neg, op: mul, inputs: [second], scalar: -1}}
        - {{name: rot, op: concat, inputs: {concat}, axis: -1}}
        - {{name: a, op: mul, inputs: {plain}}}
        - {{name: b, op: mul, inputs: {turned}}}
        - {{name: out, op: add, inputs: [a, b]}}
        """


@pytest.mark.parametrize("products", ["[x, cos]|[rot, sin]", "[cos, x]|[sin, rot]"])
def test_rotate_half_products_and_sum_become_one_op(products):
    after, summary = check_pass(model(rope(products), INPUTS, "[out]"), fuse_rotary.run,
                                dims={"batch": 2})
    assert ops(after) == ["rotary_embedding"] and summary == "1 rotary embeddings fused"
    (node,) = after.nodes
    assert node.inputs == ["x", "cos", "sin"] and node.outputs == ["out"]


@pytest.mark.parametrize("variant", ["concat_swapped", "third_split", "rot_read_twice"])
def test_other_forms_stay(variant):
    text = {"concat_swapped": rope(concat="[first, neg]"),
            "third_split": rope(halves=("0", "3", "3", "null")),
            "rot_read_twice": rope().rstrip() + "\n        - {name: again, op: relu, inputs: [rot]}\n"
            }[variant]
    outputs = "[out, again]" if variant == "rot_read_twice" else "[out]"
    after, summary = check_pass(model(text, INPUTS, outputs), fuse_rotary.run, dims={"batch": 2})
    assert summary == "" and "rotary_embedding" not in ops(after)
