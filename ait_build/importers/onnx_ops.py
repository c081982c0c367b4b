"""ONNX operator -> our ops: one small handler per operator (or family), reading the node's
inputs through the translator (from_onnx.py) and writing through Lower (lower.py). The handlers
of shapes and indexing (Reshape, Gather, Range...) are in onnx_shapes.py, activations and rounding
built from our ops in onnx_math.py, TopK and the scatters in onnx_positional.py; HANDLERS holds them all.
"""

from __future__ import annotations

import numpy as np

from ait_build.errors import AitError
from ait_build.importers import ordering
from ait_build.importers.activations import logsumexp
from ait_build.importers.composites import convolution, group_norm
from ait_build.importers.einsum import einsum
from ait_build.importers.graph import Value, registrar
from ait_build.importers.recurrent import Cell, run_layers
from ait_build.importers.onnx_math import HANDLERS as MATH
from ait_build.importers.onnx_positional import HANDLERS as POSITIONAL
from ait_build.importers.onnx_shapes import HANDLERS as SHAPES
from ait_build.importers.onnx_values import (Sizes, as_array, as_sizes, attributes, element_type,
                                             is_known, owner, size_div)
from ait_build.ir.dims import Dim
from ait_build.ops.opdef import norm_axis
from ait_build.ops.resize import CUBIC_COEFF

HANDLERS: dict = {**SHAPES, **MATH, **POSITIONAL}
handles = registrar(HANDLERS)


# -- elementwise --------------------------------------------------------------------------------

UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "HardSwish": "hardswish",
         "Sqrt": "sqrt", "Exp": "exp", "Erf": "erf", "Not": "logical_not", "Sin": "sin",
         "Cos": "cos", "Log": "log", "Ceil": "ceil", "Abs": "abs", "Sign": "sign"}


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
    edges = {"reflect": "reflect", "edge": "replicate", "wrap": "circular"}
    if mode != "constant" and mode not in edges:
        raise AitError(f"Pad mode '{mode}'")
    x = t.tensor(node, 0)
    pads = attrs.get("pads") or t.ints(node, 1)
    value = t.operand(node, 2) if len(node.input) > 2 and node.input[2] else 0.0
    if isinstance(value, Value):
        raise AitError("Pad with a fill computed in the model")
    axes = t.ints(node, 3) if len(node.input) > 3 and node.input[3] else list(range(x.rank))
    per_axis = [(0, 0)] * x.rank
    for i, axis in enumerate(axes):
        per_axis[norm_axis(axis, x.rank)] = (pads[i], pads[i + len(axes)])
    if mode != "constant":
        return t.lower.pad_edges(x, per_axis, edges[mode])
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
    if not isinstance(a, Value) and not isinstance(b, Value) and \
            (isinstance(a, Sizes) or isinstance(b, Sizes)):
        return _size_math(node.op_type, as_sizes(a), as_sizes(b))
    op = BINARY[node.op_type]
    if len(node.input) > 2:
        raise AitError(f"{node.op_type} of more than two inputs")
    a, b = (_size_operand(t, node, i) for i in range(2))
    if op == "div" and all(v.dtype in ("int32", "int64") for v in (a, b) if isinstance(v, Value)):
        return t.lower.divide(a, b, "trunc")  # ONNX Runtime divides ints as C++ does
    return t.lower.binary(op, a, b)


@handles("Mod")
def _mod(t, node):
    """Python's % (fmod = 0, ints only in ONNX) or C's fmod (fmod = 1)."""
    return t.lower.remainder(t.operand(node, 0), t.operand(node, 1),
                             bool(attributes(node).get("fmod", 0)))


def _size_operand(t, node, i: int):
    """An operand; a symbolic size beside a tensor (TorchScript's `arange(seq) * seq` in
    ConvBERT's file) as a one-element tensor of the other's dtype."""
    value, other = t.get(node, i), t.get(node, 1 - i)
    if isinstance(value, Sizes) and isinstance(other, Value) and as_array(value) is None:
        if len(value) != 1:
            raise AitError(f"{len(value)} sizes that depend on the inputs read as a tensor")
        return t.lower.size_value(value[0], other.dtype)
    return t.operand(node, i)


def _size_math(op: str, a: Sizes, b: Sizes):
    if op == "Equal":  # known for one expression, two numbers, or a dim (>= 1) and a number < 1
        pairs = list(zip(a * (len(b) if len(a) == 1 else 1), b * (len(a) if len(b) == 1 else 1)))
        if any(x != y and not (x.is_static and y.is_static) and
               not any(v.is_static and v.value < 1 for v in (x, y)) for x, y in pairs):
            raise AitError("comparing sizes that depend on the inputs")
        return np.array([x == y for x, y in pairs], np.bool_)
    if op == "Div":
        out = []
        for x, y in zip(a * (len(b) if len(a) == 1 else 1), b * (len(a) if len(b) == 1 else 1)):
            if not y.is_static:
                raise AitError("a size divided by a symbolic size")
            out.append(x.exact_div(y.value) if hasattr(x, "exact_div") else size_div(x, y.value))
        return Sizes(out)
    if op not in SIZE_MATH:
        raise AitError(f"{op} on sizes")
    if len(a) == 1 and len(b) > 1:
        a = Sizes(a * len(b))
    if len(b) == 1 and len(a) > 1:
        b = Sizes(b * len(a))
    return Sizes(SIZE_MATH[op](x, y) for x, y in zip(a, b))


@handles("Pow")
def _pow(t, node):
    exponent = t.operand(node, 1)
    if isinstance(exponent, Value):
        raise AitError("Pow with an exponent computed in the model")
    return t.lower.power(t.tensor(node, 0), exponent)


@handles("CumSum")
def _cumsum(t, node):
    attrs = attributes(node)
    x = t.tensor(node, 0)
    return t.lower.cumsum(x, t.ints(node, 1)[0], x.dtype, bool(attrs.get("reverse")),
                          bool(attrs.get("exclusive")))


@handles("Where")
def _where(t, node):
    cond, a, b = (t.get(node, i) for i in range(3))
    if is_known(cond) and (isinstance(a, Sizes) or isinstance(b, Sizes)):  # sizes picked
        picks = np.broadcast_to(as_array(cond), (max(len(as_sizes(a)), len(as_sizes(b))),))
        a, b = (as_sizes(v) * (len(picks) if len(as_sizes(v)) == 1 else 1) for v in (a, b))
        return Sizes(x if p else y for p, x, y in zip(picks, a, b))
    cond = t.tensor(node, 0)
    return t.lower.where_(cond, t.operand(node, 1), t.operand(node, 2))


@handles("Cast")
def _cast(t, node):
    value = t.get(node, 0)
    if isinstance(value, Sizes):
        return value
    if node.input[0] in t.iota:
        t.iota[node.output[0]] = t.iota[node.input[0]]
    return t.lower.cast(t.tensor(node, 0), element_type(t, attributes(node)["to"]), hint=None)


# -- GEMM-shaped --------------------------------------------------------------------------------

@handles("Conv", "ConvTranspose")
def _conv(t, node):
    """1-, 2- and 3-d convolutions, transposed ones too (composites.py)."""
    attrs = attributes(node)
    weight = t.weight(node, 1)
    if weight is None:
        raise AitError("a convolution whose weight is computed in the model")
    bias = t.weight(node, 2) if len(node.input) > 2 and node.input[2] else None
    rank = t.g.weights[weight].ndim - 2
    _check_padding(attrs, rank, (1, 2, 3))
    if attrs.get("output_shape"):
        raise AitError("ConvTranspose with output_shape (give pads and output_padding)")
    pads = attrs.get("pads", [0] * 2 * rank)
    if pads[:rank] != pads[rank:]:
        raise AitError(f"asymmetric padding {pads}")
    return convolution(t.lower, t.tensor(node, 0), weight, bias, attrs.get("strides", 1),
                       pads[:rank], attrs.get("dilations", 1), attrs.get("group", 1),
                       owner(weight), node.op_type == "ConvTranspose",
                       attrs.get("output_padding", 0))


@handles("Gemm")
def _gemm(t, node):
    attrs = attributes(node)
    if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0 or attrs.get("transA"):
        raise AitError("Gemm with alpha, beta or transA")
    weight = t.weight(node, 1)
    bias = t.weight(node, 2) if len(node.input) > 2 and node.input[2] else None
    x = t.tensor(node, 0)
    if weight is not None and (bias is None or t.g.weights[bias].ndim == 1):
        return t.lower.linear(x, weight, bias, owner(weight), in_out=not attrs.get("transB"))
    b = t.tensor(node, 1)
    out = t.lower.matmul(x, t.lower.transpose(b, 0, 1) if attrs.get("transB") else b)
    return t.lower.binary("add", out, t.operand(node, 2)) if len(node.input) > 2 else out


@handles("MatMul")
def _matmul(t, node):
    weight = t.weight(node, 1)
    a = t.tensor(node, 0)
    if weight is not None and t.g.weights[weight].ndim == 2:  # x @ W: a linear over [in, out]
        return t.lower.linear(a, weight, None, owner(weight), in_out=True)
    return t.lower.matmul(a, t.tensor(node, 1))


@handles("Einsum")
def _einsum(t, node):
    equation = attributes(node)["equation"]
    equation = equation.decode() if isinstance(equation, bytes) else equation
    return einsum(t.lower, equation, [t.tensor(node, i) for i in range(len(node.input))])


# gate blocks of ONNX's order in PyTorch's: LSTM i, o, f, c -> i, f, g, o; GRU z, r, h -> r, z, n
GATE_ORDER = {"LSTM": [0, 2, 3, 1], "GRU": [1, 0, 2]}


@handles("LSTM", "GRU")
def _recurrent(t, node):
    """One ONNX LSTM/GRU layer (either direction or both), unrolled as nn.LSTM/nn.GRU are
    (recurrent.py) with its gates put in PyTorch's order."""
    attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attributes(node).items()}
    kind = node.op_type
    if attrs.get("activations") or attrs.get("clip") or attrs.get("input_forget"):
        raise AitError(f"{kind} with activations, clip or input_forget")
    if kind == "GRU" and not attrs.get("linear_before_reset"):
        raise AitError("GRU with linear_before_reset=0 (PyTorch's GRU sets it)")
    if any(len(node.input) > i and node.input[i] for i in (4, 7)):
        raise AitError(f"{kind} with sequence_lens or peepholes")
    w, r = t.get(node, 1), t.get(node, 2)
    bias = t.get(node, 3) if len(node.input) > 3 and node.input[3] else None
    if not all(isinstance(a, np.ndarray) for a in (w, r)) or not (bias is None or is_known(bias)):
        raise AitError(f"{kind} with weights computed from the inputs")
    hidden, directions = int(attrs["hidden_size"]), w.shape[0]
    order = GATE_ORDER[kind]
    base = t.lower.path or kind.lower()

    def gates(array):  # [G*H, ...] in PyTorch's gate order
        return np.concatenate([array[g * hidden:(g + 1) * hidden] for g in order])

    cells = []
    for d in range(directions):
        suffix = "_reverse" if d else ""
        names = [t.g.add_weight(f"{base}.weight_ih{suffix}", gates(w[d])),
                 t.g.add_weight(f"{base}.weight_hh{suffix}", gates(r[d]))]
        if bias is not None:
            b = as_array(bias)[d]
            names += [t.g.add_weight(f"{base}.bias_ih{suffix}", gates(b[:len(order) * hidden])),
                      t.g.add_weight(f"{base}.bias_hh{suffix}", gates(b[len(order) * hidden:]))]
        else:
            names += [None, None]
        cells.append(Cell(*names))
    if directions == 1 and attrs.get("direction", "forward") == "reverse":
        raise AitError(f"{kind} running in reverse only")
    states = [t.get(node, i) if len(node.input) > i and node.input[i] else None
              for i in ((5, 6) if kind == "LSTM" else (5,))]
    states = [None if s is None or is_known(s) and not as_array(s).any() else
              t.tensor(node, 5 + i) for i, s in enumerate(states)]
    batch_first = bool(attrs.get("layout", 0))
    x = t.tensor(node, 0)
    out, h, c = run_layers(t.lower, kind.lower(), x, cells, hidden, directions == 2,
                           batch_first, *states, name=base)
    # Y: [T, D, N, H] (layout 1: [N, T, D, H]); ours is [T, N, D*H] ([N, T, D*H])
    a, b, _ = out.source_shape
    y = t.lower.reshape(out, (a, b, Dim.of(directions), Dim.of(hidden)))
    if not batch_first:
        y = t.lower.permute(y, [0, 2, 1, 3])
    return [y, h, c][:len(node.output)]


# -- normalization, pooling ---------------------------------------------------------------------

@handles("BatchNormalization")
def _batch_norm(t, node):
    names = [t.weight(node, i) for i in range(1, 5)]
    if None in names:
        raise AitError("BatchNormalization with statistics computed in the model")
    roles = dict(zip(("weight", "bias", "running_mean", "running_var"), names))
    out = t.lower.batch_norm(t.tensor(node, 0), roles, attributes(node).get("epsilon", 1e-5),
                             owner(names[0]))
    return [out] + [None] * (len(node.output) - 1)


@handles("LayerNormalization")
def _layer_norm(t, node):
    attrs = attributes(node)
    x = t.tensor(node, 0)
    if norm_axis(attrs.get("axis", -1), x.rank) != x.rank - 1:
        raise AitError("LayerNormalization over more than the last axis")
    weight = t.weight(node, 1)
    bias = t.weight(node, 2) if len(node.input) > 2 and node.input[2] else None
    if weight is None or bias is None:
        raise AitError("LayerNormalization needs a known scale and bias")
    eps = attrs.get("epsilon", 1e-5)
    out = t.lower.last_axis("layer_norm", x, {} if eps == 1e-5 else {"eps": float(eps)},
                            name=owner(weight), weights={"weight": weight, "bias": bias})
    return [out] + [None] * (len(node.output) - 1)


@handles("Softmax")
def _softmax(t, node):
    return t.lower.softmax(t.tensor(node, 0), attributes(node).get("axis", -1))


def _check_padding(attrs: dict, kernel_rank: int, ranks=(2,)) -> None:
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto not in ("NOTSET", "VALID"):
        raise AitError(f"auto_pad {auto} (padding computed from the input size)")
    if kernel_rank not in ranks:
        raise AitError(f"a {kernel_rank}-d window (only {', '.join(f'{r}-d' for r in ranks)})")


@handles("MaxPool", "AveragePool")
def _pool(t, node):
    """2-d windows; 1-d ones over [N, C, L] as 2-d windows of one row over [N, C, 1, L]."""
    attrs = dict(attributes(node))
    _check_padding(attrs, len(attrs["kernel_shape"]), ranks=(1, 2))
    if len(node.output) > 1 and node.output[1]:
        raise AitError(f"{node.op_type} with indices")
    if len(attrs["kernel_shape"]) == 1:
        pads = attrs.get("pads", [0, 0])
        attrs.update(kernel_shape=[1] + list(attrs["kernel_shape"]),
                     strides=[1] + list(attrs.get("strides", [1])),
                     dilations=[1] + list(attrs.get("dilations", [1])),
                     pads=[0, pads[0], 0, pads[1]])
        return t.lower.as_row_image(t.tensor(node, 0),
                                    lambda image: _pool_2d(t, node, attrs, image))
    return _pool_2d(t, node, attrs, t.tensor(node, 0))


def _pool_2d(t, node, attrs: dict, x):
    pads = attrs.get("pads", [0, 0, 0, 0])
    if pads[:2] != pads[2:]:
        raise AitError(f"asymmetric padding {pads}")
    ceil = bool(attrs.get("ceil_mode", 0))
    if node.op_type == "AveragePool" and any(d != 1 for d in attrs.get("dilations", [1])):
        raise AitError("AveragePool with dilations")
    if node.op_type == "MaxPool":
        return t.lower.pool("max_pool2d", x, attrs["kernel_shape"],
                            attrs.get("strides", 1), pads[:2], attrs.get("dilations", 1),
                            ceil_mode=ceil)
    return t.lower.pool("avg_pool2d", x, attrs["kernel_shape"],
                        attrs.get("strides", 1), pads[:2],
                        count_include_pad=bool(attrs.get("count_include_pad", 0)), ceil_mode=ceil)


RESIZE_COORDINATES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")


@handles("Resize")
def _resize(t, node):
    """Resize of the height and width of an NCHW image: nearest, linear or cubic (its taps
    clamped to the image: exclude_outside 0), the coordinate transforms resize2d has; the
    output size from `sizes`, or from `scales` when they give whole sizes (ONNX maps
    coordinates by the scale, resize2d by the size ratio)."""
    attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attributes(node).items()}
    mode = attrs.get("mode", "nearest")
    coordinates = attrs.get("coordinate_transformation_mode", "half_pixel")
    if mode not in ("nearest", "linear", "cubic") or coordinates not in RESIZE_COORDINATES:
        raise AitError(f"Resize with mode '{mode}' and coordinates '{coordinates}'")
    if attrs.get("antialias") or attrs.get("axes"):
        raise AitError("Resize with antialias or axes")
    if attrs.get("exclude_outside"):
        raise AitError("Resize with exclude_outside=1 (only 0: taps past the edge read the edge "
                       "pixel, as PyTorch's bicubic)")
    x = t.tensor(node, 0)
    src = x.source_shape
    if x.rank != 4:
        raise AitError(f"Resize of a {x.rank}-d tensor (only NCHW images)")
    sizes = t.get(node, 3) if len(node.input) > 3 and node.input[3] else None
    if sizes is not None:
        if not is_known(sizes):
            raise AitError("Resize to sizes computed from tensor values")
        sizes = list(as_sizes(sizes))
    else:
        scales = t.get(node, 2)
        scales = [float(v) for v in as_array(scales).reshape(-1)] if is_known(scales) else None
        if not scales or len(scales) != x.rank or scales[:2] != [1.0, 1.0]:
            raise AitError("Resize needs known scales (1 for N and C) or sizes")
        sizes = list(src[:2])
        for d, scale in zip(src[2:], scales[2:]):
            if not d.is_static or d.value * scale != int(d.value * scale):
                raise AitError(f"Resize by {scale} of size {d} (only whole output sizes)")
            sizes.append(Dim.of(int(d.value * scale)))
    if list(sizes[:2]) != list(src[:2]) or not all(d.is_static for d in sizes[2:]):
        raise AitError("Resize of other axes than an image's height and width")
    return t.lower.resize(x, [d.value for d in sizes[2:]], mode, coordinates,
                          attrs.get("nearest_mode", "round_prefer_floor") if mode == "nearest"
                          else "floor", attrs.get("cubic_coeff_a", CUBIC_COEFF)
                          if mode == "cubic" else CUBIC_COEFF)


@handles("GlobalAveragePool")
def _global_avg_pool(t, node):
    x = t.tensor(node, 0)
    return t.lower.mean(x, list(range(2, x.rank)), True)


@handles("GlobalMaxPool")
def _global_max_pool(t, node):
    x = t.tensor(node, 0)
    return t.lower.max(x, list(range(2, x.rank)), True)


@handles("GroupNormalization")
def _group_norm(t, node):
    """Opset 21's GroupNormalization: scale and bias per channel (opset 18's per group is
    refused)."""
    attrs = attributes(node)
    x = t.tensor(node, 0)
    weight, bias = t.tensor(node, 1), t.tensor(node, 2)
    if weight.source_shape != (x.source_shape[1],):
        raise AitError("GroupNormalization with a scale per group (opset 18)")
    return group_norm(t.lower, x, attrs["num_groups"], weight, bias, attrs.get("epsilon", 1e-5))


@handles("InstanceNormalization")
def _instance_norm(t, node):
    """A group norm of one channel per group (how exporters write nn.GroupNorm too)."""
    x = t.tensor(node, 0)
    channels = x.source_shape[1]
    if not channels.is_static:
        raise AitError("InstanceNormalization over a symbolic number of channels")
    return group_norm(t.lower, x, channels.value, t.tensor(node, 1), t.tensor(node, 2),
                      attributes(node).get("epsilon", 1e-5))


@handles("ReduceMean", "ReduceSum", "ReduceL1", "ReduceL2", "ReduceMax", "ReduceMin",
         "ReduceLogSumExp", "ReduceSumSquare", "ReduceProd")
def _reduce(t, node):
    attrs = attributes(node)
    x = t.tensor(node, 0)
    axes = attrs.get("axes") or t.ints(node, 1)
    if not axes and attrs.get("noop_with_empty_axes"):
        return x
    axes = axes or list(range(x.rank))
    keep = bool(attrs.get("keepdims", 1))
    if node.op_type == "ReduceMean":
        return t.lower.mean(x, axes, keep)
    if node.op_type == "ReduceLogSumExp":
        return logsumexp(t.lower, x, list(axes), keep)
    if node.op_type == "ReduceSumSquare":
        return t.lower.sum(t.lower.binary("mul", x, x), axes, keep)
    if node.op_type == "ReduceSum":
        return t.lower.sum(x, axes, keep)
    if node.op_type == "ReduceProd":
        return ordering.product(t.lower, x, axes, keep)
    if node.op_type in ("ReduceMax", "ReduceMin"):
        return (t.lower.max if node.op_type == "ReduceMax" else t.lower.min)(x, axes, keep)
    return t.lower.vector_norm(x, 1 if node.op_type == "ReduceL1" else 2, axes, keep)
