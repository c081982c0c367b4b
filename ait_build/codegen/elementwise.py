"""Lowering of elementwise work on any backend: activations, arithmetic, cast, batch_norm,
fused_elementwise programs (and the backends' dtype conversions at the model's edges). All of it
is one template per backend (its `elementwise` template: a loop over a collapsed broadcast index
space) with a C++ expression per element; the expressions call the inline functions every
backend's kernel header defines (ait::relu, ait::gelu, ...), so this module only names them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ait_build.codegen.cexpr import broadcast_strides, cexpr, collapse, contiguous_strides
from ait_build.codegen.kernel import make_kernel
from ait_build.errors import AitError
from ait_build.ops.elementwise import clamp_bounds
from ait_build.ops.fused import step_attrs
from ait_build.ops.opdef import TType
from ait_build.ops.registry import get_op

# the C++ type an expression computes in: float32 for every float dtype
COMPUTE_CTYPE = {"float32": "float", "float16": "float", "bfloat16": "float", "int32": "int32_t",
                 "int64": "int64_t", "bool": "uint8_t"}

# activation name (ops/elementwise.py ACTIVATIONS) -> the kernel headers' function
ACT = {"none": "ait::identity", "relu": "ait::relu", "gelu": "ait::gelu",
       "gelu_tanh": "ait::gelu_tanh", "silu": "ait::silu", "sigmoid": "ait::sigmoid",
       "tanh": "ait::tanh", "hardswish": "ait::hardswish", "relu6": "ait::relu6",
       "hardsigmoid": "ait::hardsigmoid"}
BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
C_MATH = {"sin": "sinf", "cos": "cosf", "log": "logf", "ceil": "ceilf", "floor": "floorf",
          "round": "rintf",  # to nearest, halves to even (the default rounding mode)
          "trunc": "truncf", "expm1": "expm1f", "log1p": "log1pf", "tan": "tanf", "atan": "atanf"}
COMPARE = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
           "greater_equal": ">="}
LOGIC = {"logical_and": "&&", "logical_or": "||"}


@dataclass(frozen=True)
class Operand:
    var: str  # C++ pointer expression
    ctype: str
    shape: tuple  # Dim, broadcast against the output shape


def float_literal(value) -> str:
    v = float(np.float32(value))
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "HUGE_VALF" if v > 0 else "(-HUGE_VALF)"
    text = format(v, ".9g")
    if "e" not in text and "." not in text:
        text += ".0"
    return f"{text}f"


def literal(value, dtype: str) -> str:
    if dtype in ("int32", "int64"):
        return f"static_cast<{COMPUTE_CTYPE[dtype]}>({int(value)}LL)"
    return float_literal(value)


def elementwise(lw, label: str, out: Operand, operands: list, expr: str, stmts=()) -> None:
    """One call of the elementwise template: out = expr(v0, v1, ...) with broadcasting. A
    statement may read operand 0 elsewhere in its row: `x0[$row0 + k]` (k from the row's start;
    `j` is the element's own index in the row)."""
    out_shape = tuple(out.shape)
    lists = [contiguous_strides(out_shape)] + [broadcast_strides(o.shape, out_shape)
                                               for o in operands]
    sizes, strides = collapse(out_shape, *lists)
    rank, n_in = len(sizes), len(operands)
    in_strides = strides[1:]
    kinds = []
    for s in in_strides:
        if s[-1] not in (0, 1):
            raise AitError(f"internal: elementwise operand walks its inner axis with stride {s[-1]}")
        kinds.append("s" if s[-1] == 0 else "v")
    offsets = tuple(" + ".join(f"i{k} * s{i}_{k}" for k in range(rank - 1)) or "0"
                    for i in range(n_in))
    params = [(f"{out.ctype}*", "out")] + [(f"const {o.ctype}*", f"x{i}")
                                           for i, o in enumerate(operands)]
    params += [("int64_t", f"n{k}") for k in range(rank)]
    params += [("int64_t", f"s{i}_{k}") for i in range(n_in) for k in range(rank - 1)]
    if n_in:
        stmts = tuple(s.replace("$row0", f"({offsets[0]})") for s in stmts)
    context = dict(rank=rank, rows=" * ".join(f"n{k}" for k in range(rank - 1)) or "1",
                   outer_dims=tuple(reversed(range(rank - 1))), n_in=n_in,
                   in_ctypes=tuple(o.ctype for o in operands), in_kinds=tuple(kinds),
                   in_offsets=offsets, out_ctype=out.ctype, expr=expr, stmts=tuple(stmts))
    op = lw.node.op if lw.node is not None else "convert"
    kernel = make_kernel(label, op, lw.template("elementwise"), context, params)
    args = [out.var] + [o.var for o in operands] + [cexpr(s) for s in sizes]
    args += [cexpr(in_strides[i][k]) for i in range(n_in) for k in range(rank - 1)]
    lw.call(kernel, args)


def float_bits(value) -> str:
    """A float32's bit pattern as a C++ unsigned literal (template arguments cannot be floats
    before C++20)."""
    return f"0x{np.float32(value).view(np.uint32):08x}u"


def hardtanh_struct(attrs) -> str:
    """The kernel headers' `ait::Hardtanh<low, high>` of an epilogue's hardtanh bounds."""
    from ait_build.ops.epilogue import hardtanh_bounds
    return "ait::Hardtanh<{}, {}>".format(*(float_bits(b) for b in hardtanh_bounds(attrs)))


def leaky_struct(slope: float) -> str:
    """The kernel headers' `ait::LeakyRelu<slope>` (the slope as a float32 bit pattern)."""
    return f"ait::LeakyRelu<{float_bits(slope)}>"


def act_struct(act: str, attrs) -> str | None:
    """The kernel headers' struct of an activation with parameters (hardtanh's bounds,
    leaky_relu's slope: `attrs` the node's), None for the others."""
    if act == "hardtanh":
        return hardtanh_struct(attrs)
    if act == "leaky_relu":
        return leaky_struct(attrs.get("leaky_slope", 0.01))
    return None


def act_fn(act: str, attrs) -> str:
    """The C++ function of an epilogue activation (`attrs`: the node's, for the parameters)."""
    struct = act_struct(act, attrs)
    return f"{struct}::apply" if struct else ACT[act]


def cast_expr(v: str, src: str, dst: str) -> str:
    if dst == "bool":
        return f"({v} != 0)"
    as_float = v if src in ("float32", "float16", "bfloat16") else f"static_cast<float>({v})"
    if dst == "float32":
        return as_float
    if dst == "float16":
        return f"ait::round_f16({as_float})"
    if dst == "bfloat16":
        return f"ait::round_bf16({as_float})"
    return f"static_cast<{COMPUTE_CTYPE[dst]}>({v})"


def clamp_expr(op: str, attrs: dict, arg: str, dtype: str) -> str:
    """min(max(x, low), high) through the NaN-keeping ait::maximum/minimum."""
    low, high = clamp_bounds(op, attrs)
    if low is not None:
        arg = f"ait::maximum({arg}, {literal(low, dtype)})"
    if high is not None:
        arg = f"ait::minimum({arg}, {literal(high, dtype)})"
    return arg


def op_expr(op: str, attrs: dict, args: list, dtypes: list, out_dtype: str) -> str:
    """The C++ expression of one elementwise op over argument expressions."""
    if op in ("relu", "silu", "sigmoid", "tanh", "hardswish"):
        return f"{ACT[op]}({args[0]})"
    if op == "gelu":
        return f"{ACT['gelu_tanh' if attrs.get('approximate') == 'tanh' else 'gelu']}({args[0]})"
    if op == "identity":
        return args[0]
    if op in ("sqrt", "exp", "erf"):
        return f"ait::op_{op}({args[0]})"
    if op in C_MATH:  # float functions both C++ and CUDA/HIP device code name alike
        return f"{C_MATH[op]}({args[0]})"
    if op in ("abs", "sign"):  # ints too; a NaN compares false and passes through
        one = f"static_cast<{COMPUTE_CTYPE[dtypes[0]]}>(1)"
        if op == "abs":
            return f"({args[0]} < 0 ? -{args[0]} : {args[0]})"
        return f"({args[0]} > 0 ? {one} : {args[0]} < 0 ? -{one} : {args[0]})"
    if op in ("clamp", "relu6", "hardtanh"):
        return clamp_expr(op, attrs, args[0], dtypes[0])
    if op == "leaky_relu":
        return f"{leaky_struct(attrs['negative_slope'])}::apply({args[0]})"
    if op in ("minimum", "maximum", "floor_divide", "remainder"):
        other = args[1] if attrs.get("scalar") is None else literal(attrs["scalar"], dtypes[0])
        return f"ait::{op}({args[0]}, {other})"
    if op in COMPARE:
        other = args[1] if attrs.get("scalar") is None else literal(attrs["scalar"], dtypes[0])
        return f"({args[0]} {COMPARE[op]} {other})"
    if op in LOGIC:
        return f"({args[0]} {LOGIC[op]} {args[1]})"
    if op == "logical_not":
        return f"(!{args[0]})"
    if op == "where":
        return f"({args[0]} ? {args[1]} : {args[2]})"
    if op == "cast":
        return cast_expr(args[0], dtypes[0], attrs["dtype"])
    if op in BINARY:
        if "bool" in dtypes:
            raise AitError(f"'{op}' on bool tensors is not supported")
        if attrs.get("scalar") is not None:
            args, dtypes = [args[0], literal(attrs["scalar"], dtypes[0])], [dtypes[0]] * 2
        if op == "div" and dtypes[0] in ("int32", "int64"):  # NumPy: true division, then the cast
            return (f"static_cast<{COMPUTE_CTYPE[out_dtype]}>(static_cast<double>({args[0]}) / "
                    f"static_cast<double>({args[1]}))")
        return f"({args[0]} {BINARY[op]} {args[1]})"
    raise AitError(f"internal: op '{op}' has no elementwise form")


def operand(lw, tensor: str) -> Operand:
    return Operand(lw.src(tensor), lw.ctype(tensor), lw.shape(tensor))


def destination(lw, tensor: str) -> Operand:
    return Operand(lw.dst(tensor), lw.ctype(tensor), lw.shape(tensor))


def lower_simple(lw) -> None:
    """Unary activations, binary arithmetic and cast: one op, one expression."""
    node = lw.node
    ins = [operand(lw, t) for t in node.inputs]
    dtypes = [lw.dtype(t) for t in node.inputs]
    out_dtype = lw.dtype(node.output)
    expr = op_expr(node.op, node.attrs, [f"v{i}" for i in range(len(ins))], dtypes, out_dtype)
    elementwise(lw, node.op, destination(lw, node.output), ins, expr)


def program_code(lw, program, types: list) -> tuple:
    """(statements, label) of a fused_elementwise program whose inputs x0, x1, ... have `types`
    (TType) and are the locals v0, v1, ...: one local per step; the last one, t<n-1>, is the
    result."""
    known = {f"x{i}": (f"v{i}", t) for i, t in enumerate(types)}
    stmts, names = [], []
    for j, (op, args, pairs) in enumerate(program):
        row = get_op(op)
        attrs = step_attrs(row, pairs)
        arg_types = [known[a][1] for a in args]
        (out_type,) = row.infer_types(attrs, arg_types, lw.plan.graph.dtype)
        expr = op_expr(op, attrs, [known[a][0] for a in args], [t.dtype for t in arg_types],
                       out_type.dtype)
        stmts.append(f"const {COMPUTE_CTYPE[out_type.dtype]} t{j} = {expr};")
        known[f"t{j}"] = (f"t{j}", out_type)
        names.append(op)
    return tuple(stmts), "_".join(dict.fromkeys(names))[:40].rstrip("_")


def lower_fused(lw) -> None:
    """A fused_elementwise program: one local per step inside the inner loop."""
    node = lw.node
    ins = [operand(lw, t) for t in node.inputs]
    stmts, label = program_code(lw, node.attrs["program"],
                                [TType(lw.shape(t), lw.dtype(t)) for t in node.inputs])
    elementwise(lw, f"fused_{label}", destination(lw, node.output), ins, f"t{len(stmts) - 1}",
                stmts)


def lower_rotary(lw) -> None:
    """x * cos + rotate_half(x) * sin: each element reads its partner half a row of d away
    (the collapsed rows hold whole multiples of d: d is the innermost, static dim)."""
    node = lw.node
    ins = [operand(lw, t) for t in node.inputs]
    d = lw.shape(node.output)[-1].value
    half = d // 2
    partner = (f"const float r = (j % {d} < {half}) ? -static_cast<float>(x0[$row0 + j + {half}])"
               f" : static_cast<float>(x0[$row0 + j - {half}]);")
    elementwise(lw, "rotary", destination(lw, node.output), ins, "(v0 * v1 + r * v2)", [partner])


def lower_batch_norm(lw) -> None:
    """(x - mean) * scale + bias per channel, scale computed here exactly as the reference does."""
    node = lw.node
    eps = np.float32(node.attrs["eps"])
    c = lw.shape(node.output)[-1]
    vec = (c,)

    def scale(ws):
        return ws["weight"] / np.sqrt(ws["running_var"] + eps)

    mean = Operand(lw.weight("running_mean"), "float", vec)
    sc = Operand(lw.derived_weight("bn_scale", scale, (c.value,)), "float", vec)
    bias = Operand(lw.weight("bias"), "float", vec)
    elementwise(lw, "batch_norm", destination(lw, node.output),
                [operand(lw, node.inputs[0]), mean, sc, bias], "((v0 - v1) * v2 + v3)")

