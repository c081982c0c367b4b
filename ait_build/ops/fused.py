"""Internal ops that only the optimizer creates (never written in a spec).

`fused_elementwise` runs a small program of elementwise ops in one pass over its output, so the
intermediates stay in registers. Its single attribute, `program`, is a tuple of steps

    (op, (arg, ...), ((attr, value), ...))

where an arg names a node input (`x0`, `x1`, ...) or an earlier step (`t0`, `t1`, ...); the last
step is the output. Step attrs hold only non-default values (`(("scalar", 8.0),)`). Shapes and the
reference come from the rows of the ops the steps name, so the fused op cannot drift from them.
The attribute is set by the pass, not parsed from YAML, so it is not declared in `attrs`.

`concat_elementwise` is a concat along the last dim whose result goes straight through such a
program, in one kernel (passes/fuse_concat.py).
"""

from __future__ import annotations

from ait_build.errors import OpError
from ait_build.ops.opdef import OPS, OpDef, register


def step_attrs(op: OpDef, pairs) -> dict:
    """A step's full attrs: the row's defaults, then the step's own values."""
    attrs = {a.name: a.default for a in op.attrs}
    attrs.update(dict(pairs))
    return attrs


def _walk(program, inputs, apply):
    """Runs `apply(row, attrs, args)` step by step; returns the last step's value."""
    if not program:
        raise OpError("fused_elementwise needs a non-empty program")
    values = {f"x{i}": v for i, v in enumerate(inputs)}
    out = None
    for j, (name, args, pairs) in enumerate(program):
        row = OPS[name]  # every row is registered by the time a program runs (registry.py)
        if not row.elementwise or row.internal:
            raise OpError(f"fused_elementwise step {j}: '{name}' is not a plain elementwise op")
        try:
            out = apply(row, step_attrs(row, pairs), [values[a] for a in args])
        except KeyError as exc:
            raise OpError(f"fused_elementwise step {j} reads {exc}, which is not defined yet") from None
        values[f"t{j}"] = out
    return out


def _infer(attrs, inputs, model_dtype):
    return [_walk(attrs["program"], inputs,
                  lambda row, a, xs: row.infer_types(a, xs, model_dtype)[0])]


def _reference(attrs, xs, ws):
    return [_walk(attrs["program"], xs, lambda row, a, args: row.reference(a, args, {})[0])]


register(OpDef(
    name="fused_elementwise", category="elementwise", internal=True, elementwise=True,
    doc="a chain or small DAG of elementwise ops run as one kernel (attr `program`)",
    inputs=("*xs",), infer=_infer, model_dtype=True, reference=_reference))


# `concat_elementwise` is a concat along the last dim whose result goes straight through a
# fused_elementwise program (DenseNet's concat -> batch norm -> relu): inputs are the `pieces`
# concatenated tensors, then the program's other inputs (per-channel vectors and scalars); the
# program reads the concat as `x0` and those as `x1`, `x2`, ... Both attributes are set by the
# pass (passes/fuse_concat.py).
def _concat_elementwise_infer(attrs, inputs, model_dtype):
    pieces = attrs["pieces"]
    if not 1 <= pieces <= len(inputs):
        raise OpError(f"concat_elementwise has {len(inputs)} inputs, fewer than its {pieces} pieces")
    (joined,) = OPS["concat"].infer({"axis": -1}, inputs[:pieces])
    return _infer(attrs, [joined] + list(inputs[pieces:]), model_dtype)


def _concat_elementwise_reference(attrs, xs, ws):
    joined = OPS["concat"].reference({"axis": -1}, xs[:attrs["pieces"]], {})[0]
    return _reference(attrs, [joined] + list(xs[attrs["pieces"]:]), ws)


register(OpDef(
    name="concat_elementwise", category="elementwise", internal=True,
    doc="a concat along the last dim run through a fused_elementwise program in one kernel "
        "(attrs `pieces`, `program`)",
    inputs=("*xs",), infer=_concat_elementwise_infer, model_dtype=True,
    reference=_concat_elementwise_reference))


# `strided_copy` is a chain of data-movement steps (reshape, permute, slice, constant pad) from
# one input, run as one copy (passes/fuse_data_movement.py). Its attribute `steps` holds
#     (op, ((attr, value), ...), output shape)
# per step, in order; the shapes are the graph's (symbolic) ones, so the reference can give each
# step its concrete output shape. The index map is ops/strided_view.py's `compose` of the steps.
# With `concat_axis` (not None) the chain starts from the concat of its inputs along that axis,
# which the kernel reads piece by piece instead of a concat written first.
def _strided_copy_infer(attrs, inputs):
    if attrs.get("concat_axis") is not None:
        inputs = OPS["concat"].infer({"axis": attrs["concat_axis"]}, inputs)
    elif len(inputs) != 1:
        raise OpError(f"strided_copy without concat_axis takes one input, got {len(inputs)}")
    x = inputs[0]
    for op, pairs, _ in attrs["steps"]:
        row = OPS[op]
        (x,) = row.infer(step_attrs(row, pairs), [x])
    return [x]


def _strided_copy_reference(attrs, xs, ws):
    env, x = attrs["_env"], xs[0]
    if attrs.get("concat_axis") is not None:
        (x,) = OPS["concat"].reference({"axis": attrs["concat_axis"]}, xs, {})
    for op, pairs, shape in attrs["steps"]:
        row = OPS[op]
        step = dict(step_attrs(row, pairs), _env=env, _out_shapes=[tuple(
            d.eval(env) for d in shape)])
        (x,) = row.reference(step, [x], {})
    return [x]


register(OpDef(
    name="strided_copy", category="shape", internal=True,
    doc="a chain of reshapes, permutes, slices and constant pads of one tensor (or of the concat "
        "of its inputs) run as one copy (attrs `steps`, `concat_axis`)",
    inputs=("*xs",), infer=_strided_copy_infer, reference=_strided_copy_reference))
