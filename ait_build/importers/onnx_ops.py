"""ONNX operator -> our ops: one small handler per operator (or family), reading the node's
inputs through the translator (from_onnx.py) and writing through Lower (lower.py). Handlers of
the size arithmetic exporters write (Shape, Gather, Concat, Unsqueeze...) compute on Sizes, lists
of our Dims, and emit nothing.
"""

from __future__ import annotations

import numpy as np

from ait_build.errors import AitError
from ait_build.importers.from_onnx import (ONNX_DTYPES, Sizes, as_array, as_sizes, attributes,
                                           is_known)
from ait_build.importers.graph import Value, registrar
from ait_build.ir.dims import Dim

HANDLERS: dict = {}
handles = registrar(HANDLERS)


def _dtype(t, onnx_type: int) -> str:
    dtype = ONNX_DTYPES.get(onnx_type)
    if dtype is None:
        raise AitError(f"element type {onnx_type} is not supported")
    return t.g.dtype if dtype in ("float32", "float16", "bfloat16") else dtype


# -- elementwise --------------------------------------------------------------------------------

UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "HardSwish": "hardswish",
         "Sqrt": "sqrt", "Exp": "exp", "Erf": "erf", "Not": "logical_not"}


@handles(*UNARY)
def _unary(t, node):
    return t.lower.unary(UNARY[node.op_type], t.tensor(node, 0))


@handles("Identity")
def _identity(t, node):
    return t.get(node, 0)


@handles("Dropout")
def _dropout(t, node):
    training = t.get(node, 2)
    if training is not None and (not is_known(training) or bool(as_array(training).any())):
        raise AitError("Dropout in training mode")
    if len(node.output) > 1 and node.output[1]:
        raise AitError("Dropout's mask output")
    return t.get(node, 0)


@handles("Gelu")
def _gelu(t, node):
    approx = attributes(node).get("approximate", b"none")
    approx = approx.decode() if isinstance(approx, bytes) else approx
    return t.lower.unary("gelu", t.tensor(node, 0), **({"approximate": "tanh"}
                                                        if approx == "tanh" else {}))


@handles("Clip")
def _clip(t, node):
    x = t.tensor(node, 0)
    attrs = attributes(node)
    low = t.operand(node, 1) if len(node.input) > 1 and node.input[1] else attrs.get("min")
    high = t.operand(node, 2) if len(node.input) > 2 and node.input[2] else attrs.get("max")
    if isinstance(low, Value) or isinstance(high, Value):
        raise AitError("Clip with bounds computed in the model")
    if (low, high) == (0, 6) and x.dtype not in ("int32", "int64"):
        return t.lower.unary("relu6", x)
    bounds = {k: v for k, v in (("min", low), ("max", high)) if v is not None}
    return t.lower.unary("clamp", x, **bounds) if bounds else x


@handles("HardSigmoid")
def _hard_sigmoid(t, node):
    attrs = attributes(node)
    alpha, beta = attrs.get("alpha", 0.2), attrs.get("beta", 0.5)
    x = t.tensor(node, 0)
    if abs(alpha - 1 / 6) < 1e-7 and beta == 0.5:  # PyTorch's hardsigmoid: relu6(x + 3) / 6
        return t.lower.binary("div", t.lower.unary("relu6", t.lower.binary("add", x, 3.0)), 6.0)
    scaled = t.lower.binary("add", t.lower.binary("mul", x, float(alpha)), float(beta))
    return t.lower.unary("clamp", scaled, min=0.0, max=1.0)


@handles("IsNaN")
def _isnan(t, node):
    x = t.tensor(node, 0)
    return t.lower.binary("not_equal", x, x)  # only NaN differs from itself


@handles("Pad")
def _pad(t, node):
    attrs = attributes(node)
    mode = attrs.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode != "constant":
        raise AitError(f"Pad mode '{mode}' (only constant)")
    x = t.tensor(node, 0)
    pads = attrs.get("pads") or t.ints(node, 1)
    value = t.operand(node, 2) if len(node.input) > 2 and node.input[2] else 0.0
    if isinstance(value, Value):
        raise AitError("Pad with a fill computed in the model")
    axes = t.ints(node, 3) if len(node.input) > 3 and node.input[3] else list(range(x.rank))
    per_axis = [(0, 0)] * x.rank
    for i, axis in enumerate(axes):
        per_axis[axis % x.rank] = (pads[i], pads[i + len(axes)])
    return t.lower.pad(x, per_axis, value)


@handles("Neg")
def _neg(t, node):
    return t.lower.binary("mul", t.tensor(node, 0), -1)


@handles("Reciprocal")
def _reciprocal(t, node):
    return t.lower.binary("div", 1.0, t.tensor(node, 0))


BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Max": "maximum",
          "Min": "minimum", "Equal": "equal", "Less": "less", "LessOrEqual": "less_equal",
          "Greater": "greater", "GreaterOrEqual": "greater_equal", "And": "logical_and",
          "Or": "logical_or"}
SIZE_MATH = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a + b * -1,
             "Mul": lambda a, b: a * b}


@handles(*BINARY)
def _binary(t, node):
    a, b = t.get(node, 0), t.get(node, 1)
    if isinstance(a, Sizes) or isinstance(b, Sizes):
        return _size_math(node.op_type, as_sizes(a), as_sizes(b))
    op = BINARY[node.op_type]
    if len(node.input) > 2:
        raise AitError(f"{node.op_type} of more than two inputs")
    out = t.lower.binary(op, t.operand(node, 0), t.operand(node, 1))
    if op == "div" and out.dtype in ("int32", "int64"):
        raise AitError("integer division")
    return out


def _size_math(op: str, a: Sizes, b: Sizes) -> Sizes:
    if op == "Div":
        out = []
        for x, y in zip(a * (len(b) if len(a) == 1 else 1), b * (len(a) if len(b) == 1 else 1)):
            if not y.is_static:
                raise AitError("a size divided by a symbolic size")
            out.append(x.exact_div(y.value) if hasattr(x, "exact_div") else _div(x, y.value))
        return Sizes(out)
    if op not in SIZE_MATH:
        raise AitError(f"{op} on sizes")
    if len(a) == 1 and len(b) > 1:
        a = Sizes(a * len(b))
    if len(b) == 1 and len(a) > 1:
        b = Sizes(b * len(a))
    return Sizes(SIZE_MATH[op](x, y) for x, y in zip(a, b))


def _div(x: Dim, n: int) -> Dim:
    if x.is_static:
        return Dim.of(x.value // n)
    terms = []
    for names, coef in x.terms:
        if coef % n:
            raise AitError(f"size '{x}' is not divisible by {n}")
        terms.append((names, coef // n))
    out = Dim.of(0)
    for names, coef in terms:
        term = Dim.of(coef)
        for name in names:
            term = term * Dim.of(name)
        out = out + term
    return out


@handles("Pow")
def _pow(t, node):
    exponent = t.operand(node, 1)
    if isinstance(exponent, Value):
        raise AitError("Pow with an exponent computed in the model")
    return t.lower.power(t.tensor(node, 0), exponent)


@handles("Where")
def _where(t, node):
    cond = t.tensor(node, 0)
    return t.lower.where_(cond, t.operand(node, 1), t.operand(node, 2))


@handles("Cast")
def _cast(t, node):
    value = t.get(node, 0)
    if isinstance(value, Sizes):
        return value
    return t.lower.cast(t.tensor(node, 0), _dtype(t, attributes(node)["to"]), hint=None)


# -- GEMM-shaped --------------------------------------------------------------------------------

@handles("Conv")
def _conv(t, node):
    attrs = attributes(node)
    weight = t.weight(node, 1)
    if weight is None:
        raise AitError("a convolution whose weight is computed in the model")
    bias = t.weight(node, 2) if len(node.input) > 2 and node.input[2] else None
    _check_padding(attrs, t.g.weights[weight].ndim - 2)
    pads = attrs.get("pads", [0, 0, 0, 0])
    if pads[:2] != pads[2:]:
        raise AitError(f"asymmetric padding {pads}")
    return t.lower.conv2d(t.tensor(node, 0), weight, bias, attrs.get("strides", 1), pads[:2],
                          attrs.get("dilations", 1), attrs.get("group", 1), _owner(weight))


@handles("Gemm")
def _gemm(t, node):
    attrs = attributes(node)
    if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0 or attrs.get("transA"):
        raise AitError("Gemm with alpha, beta or transA")
    weight = t.weight(node, 1)
    bias = t.weight(node, 2) if len(node.input) > 2 and node.input[2] else None
    x = t.tensor(node, 0)
    if weight is not None and (bias is None or t.g.weights[bias].ndim == 1):
        return t.lower.linear(x, weight, bias, _owner(weight), in_out=not attrs.get("transB"))
    b = t.tensor(node, 1)
    out = t.lower.matmul(x, t.lower.transpose(b, 0, 1) if attrs.get("transB") else b)
    return t.lower.binary("add", out, t.operand(node, 2)) if len(node.input) > 2 else out


@handles("MatMul")
def _matmul(t, node):
    weight = t.weight(node, 1)
    a = t.tensor(node, 0)
    if weight is not None and t.g.weights[weight].ndim == 2:  # x @ W: a linear over [in, out]
        return t.lower.linear(a, weight, None, _owner(weight), in_out=True)
    return t.lower.matmul(a, t.tensor(node, 1))


def _owner(weight: str) -> str:
    return weight[:-len(".weight")] if weight.endswith(".weight") else weight


# -- normalization, pooling ---------------------------------------------------------------------

@handles("BatchNormalization")
def _batch_norm(t, node):
    names = [t.weight(node, i) for i in range(1, 5)]
    if None in names:
        raise AitError("BatchNormalization with statistics computed in the model")
    roles = dict(zip(("weight", "bias", "running_mean", "running_var"), names))
    out = t.lower.batch_norm(t.tensor(node, 0), roles, attributes(node).get("epsilon", 1e-5),
                             _owner(names[0]))
    return [out] + [None] * (len(node.output) - 1)


@handles("LayerNormalization")
def _layer_norm(t, node):
    attrs = attributes(node)
    x = t.tensor(node, 0)
    if attrs.get("axis", -1) % x.rank != x.rank - 1:
        raise AitError("LayerNormalization over more than the last axis")
    weight = t.weight(node, 1)
    bias = t.weight(node, 2) if len(node.input) > 2 and node.input[2] else None
    if weight is None or bias is None:
        raise AitError("LayerNormalization needs a known scale and bias")
    eps = attrs.get("epsilon", 1e-5)
    out = t.lower.last_axis("layer_norm", x, {} if eps == 1e-5 else {"eps": float(eps)},
                            name=_owner(weight), weights={"weight": weight, "bias": bias})
    return [out] + [None] * (len(node.output) - 1)


@handles("Softmax")
def _softmax(t, node):
    return t.lower.softmax(t.tensor(node, 0), attributes(node).get("axis", -1))


def _check_padding(attrs: dict, kernel_rank: int) -> None:
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto not in ("NOTSET", "VALID"):
        raise AitError(f"auto_pad {auto} (padding computed from the input size)")
    if kernel_rank != 2:
        raise AitError(f"a {kernel_rank}-d window: only 2-d convolutions and pools are supported")


@handles("MaxPool", "AveragePool")
def _pool(t, node):
    attrs = attributes(node)
    _check_padding(attrs, len(attrs["kernel_shape"]))
    if attrs.get("ceil_mode") or len(node.output) > 1 and node.output[1]:
        raise AitError(f"{node.op_type} with ceil_mode or indices")
    pads = attrs.get("pads", [0, 0, 0, 0])
    if pads[:2] != pads[2:]:
        raise AitError(f"asymmetric padding {pads}")
    if node.op_type == "MaxPool":
        return t.lower.pool("max_pool2d", t.tensor(node, 0), attrs["kernel_shape"],
                            attrs.get("strides", 1), pads[:2], attrs.get("dilations", 1))
    return t.lower.pool("avg_pool2d", t.tensor(node, 0), attrs["kernel_shape"],
                        attrs.get("strides", 1), pads[:2],
                        count_include_pad=bool(attrs.get("count_include_pad", 0)))


@handles("GlobalAveragePool")
def _global_avg_pool(t, node):
    return t.lower.mean(t.tensor(node, 0), [2, 3], True)


@handles("ReduceMean")
def _reduce_mean(t, node):
    attrs = attributes(node)
    x = t.tensor(node, 0)
    axes = attrs.get("axes") or t.ints(node, 1) or list(range(x.rank))
    return t.lower.mean(x, axes, bool(attrs.get("keepdims", 1)))


# -- shapes -------------------------------------------------------------------------------------

@handles("Shape")
def _shape(t, node):
    value = t.get(node, 0)
    shape = value.source_shape if isinstance(value, Value) else tuple(
        Dim.of(s) for s in np.shape(value))
    attrs = attributes(node)
    start, end = attrs.get("start", 0), attrs.get("end")
    return Sizes(shape[start:end])


@handles("Size")
def _size(t, node):
    value = t.get(node, 0)
    out = Dim.of(1)
    for d in value.source_shape:
        out = out * d
    return Sizes([out])


def _target_shape(t, x: Value, sizes: Sizes, allow_zero: bool) -> tuple:
    """Reshape's target: 0 copies the input's size there, one -1 is inferred."""
    src = x.source_shape
    shape = []
    for i, d in enumerate(sizes):
        if d.is_static and d.value == 0 and not allow_zero:
            d = src[i]
        shape.append(d)
    if any(d.is_static and d.value == -1 for d in shape):
        known = Dim.of(1)
        for d in shape:
            if not (d.is_static and d.value == -1):
                known = known * d
        total = Dim.of(1)
        for d in src:
            total = total * d
        missing = _quotient(total, known)
        shape = [missing if d.is_static and d.value == -1 else d for d in shape]
    return tuple(shape)


def _quotient(total: Dim, known: Dim) -> Dim:
    if known.is_static:
        return _div(total, known.value)
    # symbolic: strip known's factors from total, term by term (batch*seq*768 / (batch*seq))
    if len(known.terms) != 1 or len(total.terms) != 1:
        raise AitError(f"cannot infer -1 in a reshape of {total} elements into {known} x -1")
    (kn, kc), (tn, tc) = known.terms[0], total.terms[0]
    rest = list(tn)
    for name in kn:
        if name not in rest:
            raise AitError(f"cannot infer -1 in a reshape of {total} elements into {known} x -1")
        rest.remove(name)
    if tc % kc:
        raise AitError(f"cannot infer -1 in a reshape of {total} elements into {known} x -1")
    out = Dim.of(tc // kc)
    for name in rest:
        out = out * Dim.of(name)
    return out


def _sizes_input(t, node, index: int) -> Sizes:
    """A shape input, which must be known at import time (its sizes may be dims)."""
    sizes = t.get(node, index)
    if not is_known(sizes):
        raise AitError(f"{node.op_type} to a shape computed from tensor values")
    return as_sizes(sizes)


@handles("Reshape")
def _reshape(t, node):
    sizes = _sizes_input(t, node, 1)
    x = t.tensor(node, 0)
    return t.lower.reshape(x, _target_shape(t, x, sizes, bool(attributes(node).get("allowzero"))))


@handles("Flatten")
def _flatten(t, node):
    x = t.tensor(node, 0)
    axis = attributes(node).get("axis", 1) % max(x.rank, 1)
    src = x.source_shape
    outer, inner = Dim.of(1), Dim.of(1)
    for d in src[:axis]:
        outer = outer * d
    for d in src[axis:]:
        inner = inner * d
    if x.rank == 4 and axis == 1 and all(d.is_static and d.value == 1 for d in src[2:]):
        return t.lower.squeeze_to(t.lower.squeeze_to(x, 3, src[:3]), 2, src[:2])
    return t.lower.reshape(x, (outer, inner))


@handles("Transpose")
def _transpose(t, node):
    x = t.tensor(node, 0)
    perm = attributes(node).get("perm") or list(reversed(range(x.rank)))
    return t.lower.permute(x, perm)


def _axes(t, node, index: int, rank: int) -> list:
    axes = attributes(node).get("axes")
    if axes is None:
        axes = t.ints(node, index)
    return [a % rank for a in axes] if axes is not None else None


@handles("Unsqueeze")
def _unsqueeze(t, node):
    x = t.get(node, 0)
    if isinstance(x, Sizes):  # a scalar size made a 1-d one
        return x
    x = t.tensor(node, 0)
    rank = x.rank + len(_axes(t, node, 1, 99))
    axes = _axes(t, node, 1, rank)
    shape = list(x.source_shape)
    for a in sorted(axes):
        shape.insert(a, Dim.of(1))
    return t.lower.reshape(x, tuple(shape))


@handles("Squeeze")
def _squeeze(t, node):
    x = t.get(node, 0)
    if isinstance(x, Sizes):
        return x
    x = t.tensor(node, 0)
    src = x.source_shape
    axes = _axes(t, node, 1, x.rank)
    if axes is None:
        axes = [i for i, d in enumerate(src) if d.is_static and d.value == 1]
    if len(axes) == 1:
        return t.lower.squeeze_to(x, axes[0], tuple(d for i, d in enumerate(src) if i != axes[0]))
    return t.lower.reshape(x, tuple(d for i, d in enumerate(src) if i not in axes))


@handles("Concat")
def _concat(t, node):
    parts = [t.get(node, i) for i in range(len(node.input))]
    if all(is_known(p) for p in parts):  # sizes (some symbolic)
        out = Sizes()
        for p in parts:
            out.extend(as_sizes(p))
        return out
    xs = [t.tensor(node, i) for i in range(len(node.input))]
    return t.lower.concat(xs, attributes(node)["axis"])


@handles("Gather")
def _gather(t, node):
    data, indices = t.get(node, 0), t.get(node, 1)
    axis = attributes(node).get("axis", 0)
    if isinstance(data, Sizes) and is_known(indices):
        index = np.asarray(as_array(indices))
        picked = Sizes(data[int(i)] for i in index.reshape(-1))
        if index.ndim == 0 and picked[0].is_static:  # a scalar, as ONNX has it
            return np.array(picked[0].value, np.int64)
        return picked  # a symbolic scalar stays 1-d: Unsqueeze passes Sizes through
    if is_known(indices) and not is_known(data):
        array = as_array(indices)
        if array is not None and array.ndim == 0:  # x[..., i, ...]: a select
            return t.lower.select(data, axis, int(array))
    weight = t.weight(node, 0)
    if weight is not None and axis == 0 and t.g.weights[weight].ndim == 2:
        return t.lower.embedding(t.tensor(node, 1), weight, _owner(weight))
    return t.lower.gather(t.tensor(node, 0), t.tensor(node, 1), axis)


@handles("Slice")
def _slice(t, node):
    data = t.get(node, 0)
    starts, ends = t.get(node, 1), t.get(node, 2)
    if not (is_known(starts) and is_known(ends)):
        raise AitError("Slice with bounds computed from tensor values")
    starts, ends = as_sizes(starts), as_sizes(ends)
    rank = 1 if isinstance(data, Sizes) else np.ndim(data) if is_known(data) else data.rank
    axes = t.ints(node, 3) if len(node.input) > 3 and node.input[3] else list(range(len(starts)))
    steps = t.ints(node, 4) if len(node.input) > 4 and node.input[4] else [1] * len(starts)
    if isinstance(data, Sizes):
        if axes != [0] or steps != [1] or not (starts[0].is_static and ends[0].is_static):
            raise AitError("Slice of sizes other than a plain range")
        return Sizes(data[starts[0].value:ends[0].value])
    x = t.tensor(node, 0)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step < 1:
            raise AitError("Slice with a negative step")
        axis %= rank
        end = _bound(end)
        x = t.lower.slice(x, axis, _bound(start), end, step)
    return x


def _bound(d: Dim):
    if d.is_static:
        return None if d.value >= 2**62 else d.value
    from ait_build.importers.graph import dim_attr
    name = dim_attr(d)
    if name is None:
        raise AitError(f"a slice bound '{d}' that is not a dim name")
    return name


@handles("Split")
def _split(t, node):
    x = t.tensor(node, 0)
    attrs = attributes(node)
    axis = attrs.get("axis", 0) % x.rank
    sizes = attrs.get("split") or (t.ints(node, 1) if len(node.input) > 1 and node.input[1]
                                   else None)
    if sizes is None:
        total = x.source_shape[axis]
        parts = attrs.get("num_outputs", len(node.output))
        if not total.is_static or total.value % parts:
            raise AitError(f"Split of size {total} into {parts} parts")
        sizes = [total.value // parts] * parts
    return t.lower.split(x, axis, sizes)


@handles("Expand")
def _expand(t, node):
    sizes = list(_sizes_input(t, node, 1))
    x = t.tensor(node, 0)
    src = list(x.source_shape)
    rank = max(len(sizes), len(src))
    src = [Dim.of(1)] * (rank - len(src)) + src
    sizes = [Dim.of(1)] * (rank - len(sizes)) + sizes
    # ONNX broadcasting: a size 1 on either side takes the other side's size
    out = tuple(d if not (d.is_static and d.value == 1) else s for d, s in zip(src, sizes))
    if len(x.source_shape) < rank:
        x = t.lower.reshape(x, tuple(src))
    return t.lower.expand(x, out)


@handles("ConstantOfShape")
def _constant_of_shape(t, node):
    sizes = as_sizes(t.get(node, 0))
    from onnx import numpy_helper
    value = attributes(node).get("value")
    array = numpy_helper.to_array(value) if value is not None else np.zeros(1, np.float32)
    dtype = _dtype(t, {np.dtype(np.float32): 1, np.dtype(np.int64): 7, np.dtype(np.bool_): 9,
                       np.dtype(np.int32): 6, np.dtype(np.float16): 10}.get(array.dtype, 1))
    return t.lower.fill(tuple(sizes), array.reshape(-1)[0].item(), dtype)


@handles("Range")
def _range(t, node):
    start, limit, delta = (t.get(node, i) for i in range(3))
    if not all(is_known(v) for v in (start, limit, delta)):
        raise AitError("Range with bounds computed from tensor values")
    s, d = as_array(start), as_array(delta)
    if s is None or d is None:
        raise AitError("Range with a symbolic start or step")
    limit = as_sizes(limit)[0]
    start_v, step = s.reshape(-1)[0].item(), d.reshape(-1)[0].item()
    if step != 1 or start_v != 0:
        if not limit.is_static:
            raise AitError("Range over a symbolic size with a start or step")
    count = limit if (start_v, step) == (0, 1) else \
        Dim.of(len(range(int(start_v), int(limit.value), int(step))))
    dtype = "int64" if s.dtype.kind in "iu" else t.g.dtype
    return t.lower.iota((count,), dtype, start_v, step)
