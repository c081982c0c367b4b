"""ATen op -> our ops: one small handler per op (or family), reading the FX node's arguments
through the translator (from_torch.py) and writing through Lower (lower.py). Sizes come from
the node's own output shape, so size arithmetic in the source never needs translating.

A handler returns the node's Value (or a list of Values for several outputs); an AitError it
raises becomes one line of the import's report of unsupported operations.
"""

from __future__ import annotations

from ait_build.errors import AitError
from ait_build.importers.einsum import einsum
from ait_build.importers.graph import Value, dim_attr, registrar
from ait_build.importers.torch_args import arg, empty
from ait_build.importers.torch_args import key as _key
from ait_build.importers.torch_layers import HANDLERS as LAYERS
from ait_build.importers.torch_math import HANDLERS as MATH
from ait_build.importers.torch_rearrange import HANDLERS as REARRANGE
from ait_build.importers.torch_scans import HANDLERS as SCANS
from ait_build.importers.torch_scatter import HANDLERS as SCATTER
from ait_build.importers.torch_scatter import masked_rows
from ait_build.importers.torch_trig import HANDLERS as TRIG
from ait_build.ir.dims import Dim, numel

# with the scans, products and sorts (torch_scans.py); convolutions, recurrent layers, norms, pools, resizes
# and reductions (torch_layers.py); activations, rounding, statistics and masks (torch_math.py);
# pixel and channel shuffles, rot90, Tensor.unfold (torch_rearrange.py); inverse trigonometric
# and hyperbolic functions, atan2, cdist, bucketize (torch_trig.py); scatter, index_put,
# index_add (torch_scatter.py)
HANDLERS: dict = {**SCANS, **LAYERS, **MATH, **REARRANGE, **TRIG, **SCATTER}
handles = registrar(HANDLERS)


def uniform_fill(fn):
    """A view or copy of a known tensor whose elements are all equal (a sliced mask of ones)
    becomes a `constant` of the result's shape, which follows the dims, instead of a weight."""
    def handler(t, node):
        fill = t.uniform(node.args[0])
        if fill is not None:
            return t.lower.fill(t.shape(node), fill, t.dtype(node))
        return fn(t, node)
    handler.__name__ = fn.__name__
    return handler


# -- pass-through and casts -------------------------------------------------------------------

@handles("aten.clone.default", "aten.contiguous.default", "aten.alias.default",
         "aten.detach.default", "aten.lift_fresh_copy.default", "aten.dropout.default",
         "aten.feature_dropout.default", "aten.alpha_dropout.default")
@uniform_fill
def _same(t, node):
    x = node.args[0]
    return t.tensor(x)


@handles("aten._assert_tensor_metadata.default", "aten._assert_scalar.default")
def _nothing(t, node):
    return None


CASTS = ("aten._to_copy.default", "aten.to.dtype", "aten.to.dtype_layout",
         "aten.type_as.default")


@handles(*CASTS)
@uniform_fill
def _cast(t, node):
    x = node.args[0]
    return t.lower.cast(t.tensor(x), t.dtype(node), hint=None)


@handles("aten.copy.default")
def _copy(t, node):
    """copy(self, src): src cast to self's dtype and broadcast to its shape, self's values
    unread (what a slice assignment `x[..., a:] = y` exports as, before slice_scatter)."""
    src = t.lower.cast(t.tensor(node.args[1]), t.dtype(node), hint=None)
    return t.lower.expand(src, t.shape(node))


@handles("getitem")
def _getitem(t, node):
    parts = t.values.get(node.args[0])
    if not isinstance(parts, list):
        raise AitError("indexing a result that is not a tuple of tensors")
    return parts[node.args[1]]


# -- elementwise --------------------------------------------------------------------------------

UNARY = {"aten.relu.default": "relu", "aten.sigmoid.default": "sigmoid",
         "aten.tanh.default": "tanh", "aten.silu.default": "silu",
         "aten.hardswish.default": "hardswish", "aten.relu6.default": "relu6",
         "aten.sqrt.default": "sqrt", "aten.exp.default": "exp", "aten.erf.default": "erf",
         "aten.logical_not.default": "logical_not", "aten.bitwise_not.default": "logical_not",
         "aten.sin.default": "sin", "aten.cos.default": "cos", "aten.log.default": "log",
         "aten.ceil.default": "ceil", "aten.abs.default": "abs", "aten.sign.default": "sign",
         "aten.absolute.default": "abs"}  # an alias torch.export keeps
FLOAT_ONLY = ("sin", "cos", "log", "ceil", "sqrt", "exp", "erf")


@handles(*UNARY)
def _unary(t, node):
    op, x = UNARY[_key(node)], t.tensor(node.args[0])
    if op in FLOAT_ONLY:  # PyTorch computes these of an int tensor in the default float type
        x = t.lower.cast(x, t.dtype(node))
    if _key(node) == "aten.logical_not.default":
        x = t.lower.truth(x)
    return t.lower.unary(op, x)


@handles("aten.gelu.default")
def _gelu(t, node):
    approx = arg(node, 1, "approximate", "none")
    attrs = {"approximate": "tanh"} if approx == "tanh" else {}
    return t.lower.unary("gelu", t.tensor(node.args[0]), **attrs)


@handles("aten.hardtanh.default", "aten.clamp.default", "aten.clamp_min.default",
         "aten.clamp_max.default", "aten.clip.default")
def _clamp(t, node):
    x = t.tensor(node.args[0])
    key = _key(node)
    if key == "aten.hardtanh.default":
        low, high = arg(node, 1, "min_val", -1.0), arg(node, 2, "max_val", 1.0)
    elif key == "aten.clamp_min.default":
        low, high = node.args[1], None
    elif key == "aten.clamp_max.default":
        low, high = None, node.args[1]
    else:
        low, high = arg(node, 1, "min"), arg(node, 2, "max")
    if (low, high) == (0, 6) and x.dtype != "int64":
        return t.lower.unary("relu6", x)
    if key == "aten.hardtanh.default":
        return t.lower.unary("hardtanh", x, min_val=float(low), max_val=float(high))
    attrs = {k: v for k, v in (("min", low), ("max", high)) if v is not None}
    return t.lower.unary("clamp", x, **attrs)


@handles("aten.hardsigmoid.default")
def _hardsigmoid(t, node):
    x = t.tensor(node.args[0])
    return t.lower.binary("div", t.lower.unary("relu6", t.lower.binary("add", x, 3.0)), 6.0)


@handles("aten.neg.default", "aten.negative.default")
def _neg(t, node):
    return t.lower.binary("mul", t.tensor(node.args[0]), -1)


@handles("aten.rsqrt.default")
def _rsqrt(t, node):
    return t.lower.binary("div", 1.0, t.lower.unary("sqrt", t.tensor(node.args[0])))


BINARY = {"aten.add": "add", "aten.sub": "sub", "aten.mul": "mul", "aten.div": "div",
          "aten.eq": "equal", "aten.ne": "not_equal", "aten.lt": "less", "aten.le": "less_equal",
          "aten.gt": "greater", "aten.ge": "greater_equal", "aten.maximum": "maximum",
          "aten.minimum": "minimum", "aten.__and__": "logical_and",
          "aten.bitwise_and": "logical_and", "aten.logical_and": "logical_and",
          "aten.__or__": "logical_or", "aten.bitwise_or": "logical_or",
          "aten.logical_or": "logical_or",
          # the alias spellings, which torch.export keeps (torch.multiply, torch.greater, ...)
          "aten.multiply": "mul", "aten.subtract": "sub", "aten.divide": "div",
          "aten.true_divide": "div", "aten.greater": "greater",
          "aten.greater_equal": "greater_equal", "aten.less": "less",
          "aten.less_equal": "less_equal", "aten.not_equal": "not_equal"}
OTHER = {"aten.min.other": "minimum", "aten.max.other": "maximum"}  # torch.min(a, b)


@handles(*[f"{k}.{o}" for k in BINARY for o in ("Tensor", "Scalar", "default")],
         "aten.min.other", "aten.max.other")
def _binary(t, node):
    op = BINARY.get(_key(node).rsplit(".", 1)[0]) or OTHER[_key(node)]
    a, b = t.operand(node.args[0]), t.operand(node.args[1])
    alpha = node.kwargs.get("alpha", 1)
    if alpha != 1:
        b = t.lower.binary("mul", b, alpha) if isinstance(b, Value) else b * alpha
    dtype = t.dtype(node)
    if op in ("logical_and", "logical_or"):
        if dtype != "bool":
            raise AitError("bitwise operations on integers are not supported")
        return t.lower.binary(op, t.lower.truth(a), t.lower.truth(b))
    if op in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
        return t.lower.binary(op, a, b)
    return t.lower.binary(op, a, b, dtype)


@handles("aten.div.Tensor_mode", "aten.div.Scalar_mode", "aten.floor_divide.default",
         "aten.floor_divide.Scalar")
def _rounded_div(t, node):
    """torch.div(a, b, rounding_mode=...) and torch.floor_divide (Python's //)."""
    rounding = node.kwargs.get("rounding_mode", "floor" if "floor_divide" in _key(node) else None)
    a, b = t.operand(node.args[0]), t.operand(node.args[1])
    if rounding is None:
        return t.lower.binary("div", a, b, t.dtype(node))
    return t.lower.divide(a, b, rounding, t.dtype(node))


@handles("aten.remainder.Tensor", "aten.remainder.Scalar", "aten.remainder.Scalar_Tensor",
         "aten.fmod.Tensor", "aten.fmod.Scalar")
def _remainder(t, node):
    """Python's % (torch.remainder: the divisor's sign) and C's (torch.fmod: the dividend's)."""
    a, b = t.operand(node.args[0]), t.operand(node.args[1])
    return t.lower.remainder(a, b, "fmod" in _key(node), t.dtype(node))


@handles("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(t, node):
    x, other = t.operand(node.args[0]), t.operand(node.args[1])
    return t.lower.binary("sub", other, x, t.dtype(node))


@handles("aten.addcmul.default", "aten.addcdiv.default")
def _addcmul(t, node):
    """input + value * tensor1 * tensor2 (addcdiv: / tensor2): timm's ResMLP affine layers."""
    x, a, b = (t.operand(v) for v in node.args[:3])
    dtype, value = t.dtype(node), node.kwargs.get("value", 1)
    term = t.lower.binary("mul" if "addcmul" in _key(node) else "div", a, b, dtype)
    if value != 1:
        term = t.lower.binary("mul", term, value, dtype)
    return t.lower.binary("add", x, term, dtype)


@handles("aten.pow.Tensor_Scalar")
def _pow(t, node):
    return t.lower.power(t.tensor(node.args[0]), node.args[1])


@handles("aten.where.self", "aten.where.ScalarOther", "aten.where.ScalarSelf", "aten.where.Scalar")
def _where(t, node):
    cond = t.tensor(node.args[0])
    return t.lower.where_(cond, t.operand(node.args[1]), t.operand(node.args[2]))


@handles("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(t, node):
    x, mask = t.tensor(node.args[0]), t.tensor(node.args[1])
    return t.lower.where_(mask, t.operand(node.args[2]), x)


# -- GEMM-shaped ----------------------------------------------------------------------------------

@handles("aten.linear.default")
def _linear(t, node):
    x = t.tensor(node.args[0])
    weight = t.weight_name(node.args[1], "weight")
    bias_arg = arg(node, 2, "bias")
    bias = t.weight_name(bias_arg, "bias") if bias_arg is not None else None
    if weight is not None and (bias_arg is None or bias is not None):
        return t.lower.linear(x, weight, bias, t.weight_node_name(weight))
    out = t.lower.matmul(x, t.lower.transpose(t.tensor(node.args[1]), -1, -2))
    return t.lower.binary("add", out, t.tensor(bias_arg)) if bias_arg is not None else out


@handles("aten.addmm.default", "aten.baddbmm.default")
def _addmm(t, node):
    """beta * bias + alpha * (x @ W): transformers' Conv1D (GPT-2, W [in, out]) as a linear;
    BLOOM's attention scores, baddbmm(alibi, q, k^T, beta=1, alpha=1/sqrt(d)), as a matmul and
    an add."""
    beta, alpha = arg(node, 3, "beta", 1), arg(node, 4, "alpha", 1)
    bias, x, w = node.args[0], t.tensor(node.args[1]), node.args[2]
    weight, bias_name = t.weight_name(w), t.weight_name(bias)
    if (beta, alpha) == (1, 1) and weight is not None and bias_name is not None \
            and t.g.weights[bias_name].ndim == 1 and t.g.weights[weight].ndim == 2:
        return t.lower.linear(x, weight, bias_name, t.weight_node_name(weight), in_out=True)
    out = t.lower.matmul(x, t.tensor(w), alpha=float(alpha))
    if beta == 0:  # the bias is not read (PyTorch ignores even its NaNs)
        return out
    bias = t.operand(bias)
    if isinstance(bias, (int, float)):
        bias = float(bias) * beta
    elif beta != 1:
        bias = t.lower.binary("mul", bias, float(beta))
    return t.lower.binary("add", out, bias)


@handles("aten.mm.default", "aten.matmul.default", "aten.bmm.default")
def _matmul(t, node):
    a, b = t.tensor(node.args[0]), node.args[1]
    weight = t.weight_name(b)
    if weight is not None and t.g.weights[weight].ndim == 2:  # x @ W: a linear over [in, out]
        return t.lower.linear(a, weight, None, t.weight_node_name(weight), in_out=True)
    return t.lower.matmul(a, t.tensor(b))


@handles("aten.einsum.default")
def _einsum(t, node):
    return einsum(t.lower, node.args[0], [t.tensor(a) for a in node.args[1]])


@handles("aten.scaled_dot_product_attention.default")
def _sdpa(t, node):
    q, k, v = (t.tensor(a) for a in node.args[:3])
    mask = arg(node, 3, "attn_mask")
    if arg(node, 4, "dropout_p", 0.0):
        raise AitError("attention dropout in an exported inference model")
    if node.kwargs.get("enable_gqa"):
        raise AitError("grouped-query attention is not supported")
    return t.lower.attention(q, k, v, t.tensor(mask) if mask is not None else None,
                             bool(arg(node, 5, "is_causal", False)), node.kwargs.get("scale"))


# -- shapes ------------------------------------------------------------------------------------------

@handles("aten.view.default", "aten.reshape.default", "aten._unsafe_view.default",
         "aten.unflatten.int", "aten.flatten.using_ints", "aten.squeeze.dim",
         "aten.squeeze.dims", "aten.squeeze.default", "aten.unsqueeze.default",
         "aten.view_as.default", "aten.reshape_as.default")
@uniform_fill
def _reshape(t, node):
    x = node.args[0]
    value = t.tensor(x)
    if x in t.iota and _key(node) == "aten.unsqueeze.default":
        size, position = t.iota[x]
        t.iota[node] = (size, position + (position >= node.args[1] % (value.rank + 1)))
    return t.lower.reshape(value, t.shape(node))


@handles("aten.permute.default")
def _permute(t, node):
    return t.lower.permute(t.tensor(node.args[0]), node.args[1])


@handles("aten.transpose.int")
def _transpose(t, node):
    return t.lower.transpose(t.tensor(node.args[0]), node.args[1], node.args[2])


@handles("aten.t.default", "aten.numpy_T.default")
def _t(t, node):
    x = t.tensor(node.args[0])
    return x if x.rank < 2 else t.lower.transpose(x, -1, -2)


@handles("aten.expand.default", "aten.expand_as.default")
@uniform_fill
def _expand(t, node):
    return t.lower.expand(t.tensor(node.args[0]), t.shape(node))


@handles("aten.repeat.default")
def _repeat(t, node):
    return t.lower.repeat(t.tensor(node.args[0]), [t.dim(r) for r in node.args[1]])


@handles("aten.repeat_interleave.self_int")
def _repeat_interleave(t, node):
    """Each element `repeats` times in a row along `dim` (GPT-J's rotary sin/cos): a new axis
    after it, expanded, merged back; without a dim, of the flattened tensor."""
    x, repeats, axis = t.tensor(node.args[0]), arg(node, 1, "repeats"), arg(node, 2, "dim")
    if not isinstance(repeats, int):
        raise AitError("repeat_interleave with repeats from a tensor (only a number)")
    if axis is None:
        x, axis = t.lower.flat(x), 0
    axis %= x.rank
    shape = tuple(x.source_shape)
    spread = shape[:axis + 1] + (Dim.of(1),) + shape[axis + 1:]
    grown = shape[:axis + 1] + (Dim.of(repeats),) + shape[axis + 1:]
    merged = shape[:axis] + (shape[axis] * repeats,) + shape[axis + 1:]
    return t.lower.reshape(t.lower.expand(t.lower.reshape(x, spread), grown), merged)


@handles("aten.cat.default", "aten.concat.default")
def _cat(t, node):
    # torch.cat leaves out empty pieces, and so do we: an empty key/value cache before the
    # first step (OPT's, BLOOM's, GPT-NeoX's: a [0] tensor), a slice of no columns (one piece
    # at least is left: a cat of empty pieces alone is empty, and the translator skips it)
    pieces = [t.tensor(a) for a in node.args[0] if not empty(a)]
    return pieces[0] if len(pieces) == 1 else t.lower.concat(pieces, arg(node, 1, "dim", 0))


@handles("aten.stack.default")
def _stack(t, node):
    axis = arg(node, 1, "dim", 0)
    parts = []
    for a in node.args[0]:
        x = t.lower.plain(t.tensor(a))
        axis %= x.rank + 1
        shape = tuple(x.shape[:axis]) + (1,) + tuple(x.shape[axis:])
        parts.append(t.lower.reshape(x, shape))
    return t.lower.concat(parts, axis)


@handles("aten.split.Tensor", "aten.split_with_sizes.default", "aten.chunk.default",
         "aten.unbind.int", "aten.split.sizes")
def _split(t, node):
    x = t.tensor(node.args[0])
    key = _key(node)
    axis = arg(node, 2 if key != "aten.unbind.int" else 1, "dim", 0) % x.rank
    sizes = [t.dim(v.shape[axis]) if key != "aten.unbind.int" else 1 for v in node.meta["val"]]
    if not all(getattr(s, "is_static", True) for s in sizes):
        raise AitError("split into parts of symbolic size")
    parts = t.lower.split(x, axis, [s.value if hasattr(s, "value") else s for s in sizes])
    if key != "aten.unbind.int":
        return parts
    return [t.lower.squeeze_to(p, axis, tuple(t.dim(s) for s in v.shape))
            for p, v in zip(parts, node.meta["val"])]


@handles("aten.select.int")
def _select(t, node):
    x = t.tensor(node.args[0])
    return t.lower.select(x, node.args[1], _int(t, node.args[2]))


@handles("aten.slice.Tensor")
@uniform_fill
def _slice(t, node):
    x_arg = node.args[0]
    x = t.tensor(x_arg)
    axis = arg(node, 1, "dim", 0)
    start, end = arg(node, 2, "start"), arg(node, 3, "end")
    step = arg(node, 4, "step", 1)
    size = x.source_shape[axis % x.rank]
    start = _bound(t, start, size)
    end = None if end is None or (isinstance(end, int) and end >= 2**62) else \
        _bound(t, end, size)
    return t.lower.slice(x, axis, start, end, step)


def _bound(t, value, size: Dim | None = None):
    if value is None or isinstance(value, int):
        return value
    d = t.dim(value.meta["val"])
    simple = dim_attr(d)
    if simple is None and size is not None and all(c < 0 for _, c in d.terms):
        simple = dim_attr(d + size)  # from the end: x[:, -seq:] on an axis of seq
    if simple is None:
        raise AitError(f"a slice bound '{d}' that is a product of dims")
    return simple


def _int(t, value) -> int:
    if isinstance(value, int):
        return value
    raise AitError("an index computed at run time")


@handles("aten.slice_scatter.default")
def _slice_scatter(t, node):
    """x with x[start:end] along `dim` replaced by src: the parts before and after, and src,
    joined (step 1)."""
    x, src = t.tensor(node.args[0]), t.tensor(node.args[1])
    axis = arg(node, 2, "dim", 0) % x.rank
    start, end, step = arg(node, 3, "start"), arg(node, 4, "end"), arg(node, 5, "step", 1)
    if step != 1:
        raise AitError("slice_scatter with a step")
    size = x.source_shape[axis]
    start = _bound(t, start) or 0
    end = None if end is None or isinstance(end, int) and size.is_static and end >= size.value \
        else _bound(t, end)
    parts = ([t.lower.slice(x, axis, 0, start)] if start else []) + [src] + \
        ([t.lower.slice(x, axis, end, None)] if end is not None else [])
    return t.lower.concat(parts, axis) if len(parts) > 1 else src


@handles("aten.zero.default")
def _zero(t, node):
    return t.lower.fill(t.shape(node), 0, t.dtype(node))


PAD_MODULES = {f"aten.{kind}_pad{d}d.default": mode for d in (1, 2, 3) for kind, mode in
               (("reflection", "reflect"), ("replication", "replicate"))}


@handles("aten.constant_pad_nd.default", "aten.pad.default", "aten._pad_circular.default",
         *PAD_MODULES)
def _pad(t, node):
    """F.pad in each mode, nn.ReflectionPad*d and nn.ReplicationPad*d."""
    x = t.tensor(node.args[0])
    pads = list(node.args[1])
    key = _key(node)
    mode = PAD_MODULES.get(key, "circular" if key == "aten._pad_circular.default" else
                           arg(node, 2, "mode", "constant") if key == "aten.pad.default"
                           else "constant")
    per_axis = [(0, 0)] * x.rank
    for i in range(len(pads) // 2):  # F.pad lists the last dim first
        per_axis[x.rank - 1 - i] = (pads[2 * i], pads[2 * i + 1])
    if mode != "constant":
        return t.lower.pad_edges(x, per_axis, mode)
    value = arg(node, 2 if key != "aten.pad.default" else 3, "value", 0.0) or 0.0
    return t.lower.pad(x, per_axis, value)


@handles("aten.flip.default")
def _flip(t, node):
    x = t.tensor(node.args[0])
    for axis in node.args[1]:
        size = x.source_shape[axis % x.rank]
        if not size.is_static:
            raise AitError(f"flipping an axis of symbolic size {size}")
        x = t.lower.take(x, axis, list(reversed(range(size.value))))
    return x


@handles("aten.roll.default")
def _roll(t, node):
    x = t.tensor(node.args[0])
    dims = list(arg(node, 2, "dims", []))
    if not dims:  # over the flattened tensor
        flat = t.lower.roll(t.lower.flat(x), list(node.args[1]), [0])
        return t.lower.reshape(flat, tuple(x.source_shape))
    return t.lower.roll(x, list(node.args[1]), dims)


# -- lookups -------------------------------------------------------------------------------------

@handles("aten.embedding.default")
def _embedding(t, node):
    weight = t.weight_name(node.args[0])
    ids = t.tensor(node.args[1])
    if weight is None:
        return t.lower.gather(t.tensor(node.args[0]), ids, 0)
    return t.lower.embedding(ids, weight, t.weight_node_name(weight))


@handles("aten.index_select.default")
def _index_select(t, node):
    return t.lower.gather(t.tensor(node.args[0]), t.tensor(node.args[2]), node.args[1])


@handles("aten.index.Tensor")
@uniform_fill
def _index(t, node):
    x_arg, indices = node.args[0], node.args[1]
    given = [(i, a) for i, a in enumerate(indices) if a is not None]
    x = t.tensor(x_arg)
    if len(given) == 1:
        axis, idx = given[0]
        value = t.tensor(idx)
        if value.dtype == "bool":
            if axis == 0 and masked_rows(t, node, idx):  # x[mask] += v, x[mask] = y[mask] * 2
                return x
            raise AitError("indexing with a bool mask is not supported")
        return t.lower.gather(x, value, axis)
    # every axis indexed by an arange over it, each placed at its own position of the result:
    # the result is x with size-1 axes inserted (transformers' mask[batch_idx, kv_idx])
    shape = t.shape(node)
    if len(given) == x.rank and all(a in t.iota for _, a in given):
        spots = [t.iota[a] for _, a in given]
        if all(size == x.source_shape[i] for (i, _), (size, _) in zip(given, spots)) and \
                [p for _, p in spots] == sorted(p for _, p in spots):
            return t.lower.reshape(x, shape)
    # x[arange(b), idx] with idx [b] (CLIP's pooled token): row i takes x[i, idx[i]], a gather
    # of one element per row along axis 1
    if [i for i, _ in given] == [0, 1] and given[0][1] in t.iota:
        b, rest = x.source_shape[0], tuple(x.source_shape[2:])
        idx = t.tensor(given[1][1])
        if t.iota[given[0][1]] == (b, 0) and idx.rank == 1 and idx.dtype != "bool":
            one = (Dim.of(1),) * (len(rest) + 1)
            index = t.lower.expand(t.lower.reshape(idx, (b,) + one), (b, Dim.of(1)) + rest)
            return t.lower.reshape(t.lower.gather_elements(x, index, 1), (b,) + rest)
    return _advanced_index(t, x, [(i, t.tensor(a)) for i, a in given])


def _advanced_index(t, x, given: list):
    """x[i0, i1, ...] with integer index tensors on several axes: one flat index per element,
    i0 * size1 + i1 (each index taken modulo its axis: a negative one counts from the end), then
    one gather over those axes merged. Adjacent indexed axes keep their place in the result;
    others move first (PyTorch's rule), so then x is permuted to put them first."""
    axes = [i for i, _ in given]
    if any(v.dtype not in ("int32", "int64") for _, v in given):
        raise AitError("advanced indexing with several index tensors, one of them a bool mask")
    shape = tuple(x.source_shape)
    if axes != list(range(axes[0], axes[0] + len(axes))):
        rest = [i for i in range(x.rank) if i not in axes]
        x = t.lower.permute(x, axes + rest)
        shape = tuple(shape[i] for i in axes + rest)
        axes = list(range(len(axes)))
    flat = t.lower.flat_index([v for _, v in given], [shape[a] for a in axes])
    merged = shape[:axes[0]] + (numel(shape[axes[0]:axes[-1] + 1]),) + shape[axes[-1] + 1:]
    return t.lower.gather(t.lower.reshape(x, merged), flat, axes[0])


@handles("aten.gather.default")
@uniform_fill
def _torch_gather(t, node):
    return t.lower.gather_elements(t.tensor(node.args[0]), t.tensor(node.args[2]), node.args[1])


# -- values made in the model --------------------------------------------------------------------

@handles("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(t, node):
    key = _key(node)
    start = 0 if key == "aten.arange.default" else node.args[0]
    step = arg(node, 2, "step", 1) if key == "aten.arange.start_step" else 1
    if not isinstance(step, (int, float)) or not isinstance(start, (int, float)) and \
            not hasattr(start, "meta"):
        raise AitError("arange with a start or step computed at run time")
    shape = t.shape(node)
    if isinstance(start, (int, float)):
        value = t.lower.iota(shape, t.dtype(node), start, step)  # batch*seq positions too
        if dim_attr(shape[0]) is not None:
            t.iota[node] = (shape[0], 0)
        return value
    # a start that is a size (XLNet's relative positions: arange(seq, -seq, -1)): the positions
    # from 0 plus the size as a one-element tensor
    dtype = t.dtype(node)
    first = t.lower.size_value(t.dim(start), dtype)
    return t.lower.binary("add", t.lower.iota(shape, dtype, 0, step), first)


@handles("aten.full.default", "aten.zeros.default", "aten.ones.default", "aten.new_zeros.default",
         "aten.new_ones.default", "aten.new_full.default", "aten.zeros_like.default",
         "aten.ones_like.default", "aten.full_like.default", "aten.scalar_tensor.default",
         "aten.empty.memory_format", "aten.empty_like.default", "aten.new_empty.default")
def _full(t, node):
    """Filled tensors; torch.empty* as zeros (what they hold is unspecified, and models
    overwrite it: MoE's inverse permutation, DeepSeek-V3's concat written as two copies)."""
    key = _key(node)
    if "zeros" in key or "empty" in key:
        value = 0
    elif "ones" in key:
        value = 1
    elif key in ("aten.full.default", "aten.new_full.default"):
        value = node.args[1] if key == "aten.full.default" else node.args[2]
    elif key == "aten.full_like.default":
        value = node.args[1]
    else:
        value = node.args[0]
    return t.lower.fill(t.shape(node), value, t.dtype(node))


@handles("aten.add.Tensor")
def _add(t, node):
    """An arange plus 0 is still an arange over its dim (transformers adds a cache offset)."""
    value = _binary(t, node)
    a, b = node.args[0], node.args[1]
    if hasattr(a, "op") and a in t.iota and t.number(b) == 0:
        t.iota[node] = t.iota[a]
    return value
