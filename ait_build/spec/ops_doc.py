"""docs/ops.md from the op registry: `python -m ait_build.spec.ops_doc > docs/ops.md`.

A test compares the checked-in page with this output, so the reference cannot drift from the
code. Each op's example goes through the real attribute parser, shape inference and parameter
rows when the page is made: the shapes and weight names it shows are computed, not typed.
"""

from __future__ import annotations

import sys

import yaml

from ait_build.errors import Location
from ait_build.ir.dims import Dim, DimRange, shape_str
from ait_build.ops.opdef import REQUIRED, TType
from ait_build.ops.registry import all_ops
from ait_build.spec.attrs import parse_attrs

CATEGORIES = ("elementwise", "logic", "conv", "pool", "resize", "gemm", "norm", "attention",
              "shape", "gather", "constant")
NODE_FIELDS = ("name", "op", "inputs", "outputs", "weights")
EXAMPLE_DIMS = {"batch": DimRange("batch", 1, 64, 8), "seq": DimRange("seq", 1, 512, 128)}

KINDS = {
    "int": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
    "ints": "a list of integers", "pair": "an integer or a list of two ([h, w])",
    "shape": "a list of sizes: integers, dim names, -1 (inferred) or 0 (copied)",
    "dtype": "a dtype name", "dim": "an integer or a dim name",
    "dim_or_none": "an integer, a dim name or null", "number_or_none": "a number or null",
    "epsilon": "a finite number >= 0 (NaN or a negative one is refused)",
}

# op -> (the example's inputs: name -> shape, or (shape, dtype); the node as one line of YAML)
X = {"x": ["batch", 64]}
EXAMPLES = {
    "relu": (X, "{op: relu, inputs: [x]}"),
    "silu": (X, "{op: silu, inputs: [x]}"),
    "sigmoid": (X, "{op: sigmoid, inputs: [x]}"),
    "tanh": (X, "{op: tanh, inputs: [x]}"),
    "hardswish": (X, "{op: hardswish, inputs: [x]}"),
    "gelu": (X, "{op: gelu, inputs: [x], approximate: tanh}"),
    "identity": (X, "{op: identity, inputs: [x]}"),
    "add": ({"x": ["batch", 64], "y": [64]}, "{op: add, inputs: [x, y]}"),
    "sub": (X, "{op: sub, inputs: [x], scalar: 1.0}"),
    "mul": (X, "{op: mul, inputs: [x], scalar: 0.125}"),
    "div": ({"x": ["batch", 64], "y": ["batch", 1]}, "{op: div, inputs: [x, y]}"),
    "cast": (X, "{op: cast, inputs: [x], dtype: float16}"),
    "clamp": (X, "{op: clamp, inputs: [x], min: 0.0}"),
    "sqrt": (X, "{op: sqrt, inputs: [x]}"),
    "exp": (X, "{op: exp, inputs: [x]}"),
    "erf": (X, "{op: erf, inputs: [x]}"),
    "sin": (X, "{op: sin, inputs: [x]}"),
    "cos": (X, "{op: cos, inputs: [x]}"),
    "log": (X, "{op: log, inputs: [x]}"),
    "ceil": (X, "{op: ceil, inputs: [x]}"),
    "floor": (X, "{op: floor, inputs: [x]}"),
    "round": (X, "{op: round, inputs: [x]}"),
    "trunc": (X, "{op: trunc, inputs: [x]}"),
    "expm1": (X, "{op: expm1, inputs: [x]}"),
    "log1p": (X, "{op: log1p, inputs: [x]}"),
    "tan": (X, "{op: tan, inputs: [x]}"),
    "atan": (X, "{op: atan, inputs: [x]}"),
    "abs": ({"pos": (["batch", "seq", "seq"], "int64")}, "{op: abs, inputs: [pos]}"),
    "sign": ({"pos": (["batch", "seq", "seq"], "int64")}, "{op: sign, inputs: [pos]}"),
    "relu6": (X, "{op: relu6, inputs: [x]}"),
    "hardtanh": (X, "{op: hardtanh, inputs: [x], min_val: -2.0, max_val: 2.0}"),
    "leaky_relu": (X, "{op: leaky_relu, inputs: [x], negative_slope: 0.1}"),
    "minimum": ({"x": ["batch", 64], "y": ["batch", 64]}, "{op: minimum, inputs: [x, y]}"),
    "maximum": (X, "{op: maximum, inputs: [x], scalar: 0.5}"),
    "floor_divide": ({"pos": (["batch", "seq"], "int64")},
                     "{op: floor_divide, inputs: [pos], scalar: 2}"),
    "remainder": ({"ids": (["batch", "seq"], "int64")}, "{op: remainder, inputs: [ids], scalar: 997}"),
    "equal": ({"ids": (["batch", "seq"], "int64")}, "{op: equal, inputs: [ids], scalar: 0}"),
    "not_equal": ({"x": ["batch", 64], "y": ["batch", 64]}, "{op: not_equal, inputs: [x, y]}"),
    "less": ({"x": ["batch", 64], "y": [64]}, "{op: less, inputs: [x, y]}"),
    "less_equal": ({"cols": [1, "seq"], "rows": ["seq", 1]},
                   "{name: causal, op: less_equal, inputs: [cols, rows]}"),
    "greater": (X, "{op: greater, inputs: [x], scalar: 0.0}"),
    "greater_equal": (X, "{op: greater_equal, inputs: [x], scalar: 0.0}"),
    "logical_and": ({"a": (["batch", 64], "bool"), "b": ([64], "bool")},
                    "{op: logical_and, inputs: [a, b]}"),
    "logical_or": ({"a": (["batch", 64], "bool"), "b": ([64], "bool")},
                   "{op: logical_or, inputs: [a, b]}"),
    "logical_not": ({"mask": (["batch", "seq"], "bool")}, "{op: logical_not, inputs: [mask]}"),
    "where": ({"mask": (["seq", "seq"], "bool"), "scores": ["batch", 12, "seq", "seq"],
               "fill": [1]}, "{op: where, inputs: [mask, scores, fill]}"),
    "constant": ({}, "{name: fill, op: constant, shape: [1], value: -.inf}"),
    "iota": ({}, "{name: positions, op: iota, shape: [seq]}"),
    "roll": ({"x": ["batch", 56, 56, 96]}, "{op: roll, inputs: [x], shifts: [-3, -3], dims: [1, 2]}"),
    "conv2d": ({"image": ["batch", 224, 224, 3]},
               "{name: conv1, op: conv2d, inputs: [image], out_channels: 64, kernel: 7, stride: 2, "
               "padding: 3, bias: false}"),
    "max_pool2d": ({"x": ["batch", 112, 112, 64]},
                   "{op: max_pool2d, inputs: [x], kernel: 3, stride: 2, padding: 1}"),
    "avg_pool2d": ({"x": ["batch", 56, 56, 64]}, "{op: avg_pool2d, inputs: [x], kernel: 2}"),
    "global_avg_pool": ({"x": ["batch", 7, 7, 2048]}, "{op: global_avg_pool, inputs: [x]}"),
    "resize2d": ({"x": ["batch", 28, 28, 21]}, "{op: resize2d, inputs: [x], size: 224, "
                 "mode: linear, coordinates: half_pixel}"),
    "linear": ({"x": ["batch", "seq", 768]},
               "{name: fc1, op: linear, inputs: [x], out_features: 3072, activation: gelu}"),
    "cumsum": ({"mask": (["batch", "seq"], "int32")}, "{op: cumsum, inputs: [mask], axis: 1}"),
    "grouped_matmul": ({"rows": ["seq", 1024], "gate_up": [8, 5632, 1024],
                        "ends": ([8], "int32")},
                       "{op: grouped_matmul, inputs: [rows, gate_up, ends], transpose_b: true}"),
    "matmul": ({"q": ["batch", 12, "seq", 64], "k": ["batch", 12, "seq", 64]},
               "{name: scores, op: matmul, inputs: [q, k], transpose_b: true, alpha: 0.125}"),
    "bmm": ({"a": ["batch", 32, 64], "b": ["batch", 64, 16]}, "{op: bmm, inputs: [a, b]}"),
    "batch_norm": ({"x": ["batch", 56, 56, 64]}, "{name: bn1, op: batch_norm, inputs: [x]}"),
    "layer_norm": ({"x": ["batch", "seq", 768], "residual": ["batch", "seq", 768]},
                   "{name: ln, op: layer_norm, inputs: [x, residual], eps: 1.0e-12}"),
    "rms_norm": ({"x": ["batch", "seq", 768]}, "{name: norm, op: rms_norm, inputs: [x]}"),
    "rotary_embedding": ({"q": ["batch", "seq", 32, 128], "cos": [1, "seq", 1, 128],
                          "sin": [1, "seq", 1, 128]},
                         "{name: q_rot, op: rotary_embedding, inputs: [q, cos, sin]}"),
    "softmax": ({"scores": ["batch", 12, "seq", "seq"]}, "{op: softmax, inputs: [scores]}"),
    "multi_head_attention": (
        {"qkv": ["batch", "seq", 2304], "mask": ["batch", 1, 1, "seq"]},
        "{name: attn, op: multi_head_attention, inputs: [qkv, mask], num_heads: 12, head_dim: 64, "
        "packed: true}"),
    "reshape": ({"x": ["batch", "seq", 768]}, "{op: reshape, inputs: [x], shape: [0, 0, 12, -1]}"),
    "flatten": ({"x": ["batch", 1, 1, 2048]}, "{op: flatten, inputs: [x]}"),
    "permute": ({"x": ["batch", "seq", 12, 64]}, "{op: permute, inputs: [x], dims: [0, 2, 1, 3]}"),
    "transpose": ({"x": ["batch", 768, 196]}, "{op: transpose, inputs: [x], dim0: 1, dim1: 2}"),
    "expand": ({"cls": [1, 1, 768]}, "{op: expand, inputs: [cls], shape: [batch, -1, -1]}"),
    "concat": ({"cls": ["batch", 1, 768], "patches": ["batch", 196, 768]},
               "{op: concat, inputs: [cls, patches], axis: 1}"),
    "split": ({"x": ["batch", "seq", 2304]}, "{name: qkv, op: split, inputs: [x], sections: 3}"),
    "slice": ({"x": ["batch", 197, 768]}, "{op: slice, inputs: [x], axis: 1, start: 0, end: 1}"),
    "pad": ({"x": ["batch", 56, 56, 64]}, "{op: pad, inputs: [x], pads: [0, 0, 1, 1, 1, 1, 0, 0]}"),
    "embedding": ({"ids": (["batch", "seq"], "int64")},
                  "{name: word_embeddings, op: embedding, inputs: [ids], num_embeddings: 30522, "
                  "embedding_dim: 768}"),
    "gather": ({"table": [512, 768], "ids": (["batch", "seq"], "int64")},
               "{op: gather, inputs: [table, ids], axis: 0}"),
    "gather_elements": ({"scores": ["batch", 12, "seq", 512],
                         "buckets": (["batch", 12, "seq", "seq"], "int64")},
                        "{op: gather_elements, inputs: [scores, buckets], axis: 3}"),
    "permute_elements": ({"expert_ids": (["seq"], "int64"), "places": (["seq"], "int64")},
                         "{op: permute_elements, inputs: [expert_ids, places], axis: 0}"),
    "parameter": ({}, "{name: cls, op: parameter, shape: [1, 1, 768], "
                      "weights: {value: class_token}}"),
}


def example_types(inputs: dict) -> dict:
    """name -> TType of an example's inputs (float32 unless given)."""
    out = {}
    for name, spec in inputs.items():
        shape, dtype = spec if isinstance(spec, tuple) else (spec, "float32")
        out[name] = TType(tuple(Dim.of(d) for d in shape), dtype)
    return out


def run_example(name: str):
    """(node, [input TType], [output TType], {role: (weight name, shape)}) of an op's example."""
    op = all_ops()[name]
    inputs, line = EXAMPLES[name]
    node = yaml.safe_load(line)
    raw = {k: v for k, v in node.items() if k not in NODE_FIELDS}
    attrs = parse_attrs(op, raw, {}, EXAMPLE_DIMS, Location("docs/ops.md"), node.get("name", name))
    types = example_types(inputs)
    ins = [types[i] for i in node.get("inputs", [])]
    outs = op.infer_types(attrs, ins, "float32")
    node_name = node.get("name", name)
    renamed = node.get("weights", {})
    params = op.params(attrs, ins) if op.params else {}
    weights = {role: (renamed.get(role, f"{node_name}.{role}"), shape_str(p.shape))
               for role, p in params.items()}
    return node, ins, outs, weights


def _cell(text) -> str:
    return str(text).replace("|", "\\|")


def _literal(value) -> str:
    if value is REQUIRED:
        return "required"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if value is None:
        return "`null`"
    if isinstance(value, tuple):
        return "`[" + ", ".join(str(v) for v in value) + "]`"
    return f"`{value}`"


def _inputs(op) -> str:
    if not op.inputs:
        return "none"
    parts = []
    for n in op.inputs:
        if n.startswith("*"):
            parts.append(f"`{n[1:]}` (one or more)")
        elif n.endswith("?"):
            parts.append(f"`{n[:-1]}` (optional)")
        else:
            parts.append(f"`{n}`")
    return ", ".join(parts)


def render_op(op) -> list:
    lines = [f"### `{op.name}`", "", op.doc + ".", ""]
    if op.notes:
        lines += [f"PyTorch: {op.notes}", ""]
    lines += [f"Inputs: {_inputs(op)}.", ""]
    if op.attrs:
        lines += ["| attribute | kind | default | choices | meaning |", "|---|---|---|---|---|"]
        for a in op.attrs:
            choices = ", ".join(f"`{c}`" for c in a.choices)
            lines.append(f"| `{a.name}` | {a.kind} | {_literal(a.default)} | {_cell(choices)} | "
                         f"{_cell(a.doc)} |")
        lines.append("")
    if op.weight_shapes:
        lines += ["| weight | shape |", "|---|---|"]
        lines += [f"| `{role}` | {_cell(shape)} |" for role, shape in op.weight_shapes]
        lines.append("")
    if op.name in EXAMPLES:
        node, ins, outs, weights = run_example(op.name)
        lines += ["```yaml", "- " + EXAMPLES[op.name][1], "```", ""]
        names = node.get("inputs", [])
        given = ", ".join(f"`{n}: {t}`" for n, t in zip(names, ins)) or "no inputs"
        lines.append(f"With {given}: output " + ", ".join(f"`{t}`" for t in outs) + ".")
        if weights:
            lines.append("Weights: " + ", ".join(f"`{w}` {s}" for w, s in weights.values()) + ".")
        lines.append("")
    return lines


HEADER = """# Op reference

Generated from the op registry (`ait_build/ops/`) by `python -m ait_build.spec.ops_doc > docs/ops.md`;
a test fails when this page and the code disagree. Every example below was run through the spec
parser and shape inference to produce the shapes shown.

Conventions:

- Images are NHWC (`[batch, height, width, channels]`); conv weights keep PyTorch's OIHW layout.
- A weight is stored as `<node name>.<role>` (`conv1.weight`, `bn1.running_mean`), so PyTorch
  `state_dict` names load unchanged; a node's `weights:` map renames them.
- conv2d, linear, matmul and bmm share one epilogue: `act(alpha * acc + bias + residual)`, the
  residual being the optional last input.
- The reference executor computes every float tensor in float32, whatever the model dtype.
- Where an op is named after a PyTorch op it behaves like it; each "PyTorch:" line names the
  equivalent and every deliberate difference.
"""


def render() -> str:
    ops = all_ops()
    public = [op for op in ops.values() if not op.internal]
    cats = list(CATEGORIES) + sorted({op.category for op in public} - set(CATEGORIES))
    lines = [HEADER, "Attribute kinds: " + "; ".join(f"**{k}**: {v}" for k, v in KINDS.items())
             + ".", "", "## Ops", ""]
    for cat in cats:
        names = sorted(op.name for op in public if op.category == cat)
        if names:
            lines.append(f"- {cat}: " + ", ".join(f"[`{n}`](#{n})" for n in names))
    lines.append("")
    for cat in cats:
        members = sorted((op for op in public if op.category == cat), key=lambda op: op.name)
        if not members:
            continue
        lines += [f"## {cat}", ""]
        for op in members:
            lines += render_op(op)
    internal = sorted((op for op in ops.values() if op.internal), key=lambda op: op.name)
    if internal:
        lines += ["## Ops created by passes", "",
                  "The optimizer writes these; a spec cannot name them.", ""]
        for op in internal:
            lines += render_op(op)
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
