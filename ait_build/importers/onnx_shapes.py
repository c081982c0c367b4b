"""ONNX shapes and indexing -> our ops. The size arithmetic exporters write (Shape, Gather,
Concat, Unsqueeze...) computes on Sizes, lists of our Dims, and emits nothing; an arange (Range)
is followed through Unsqueeze, Expand and Cast as the torch importer follows it, so indexing
with a grid of aranges (GatherND of transformers' masks) becomes a reshape.
"""

from __future__ import annotations

import numpy as np

from ait_build.errors import AitError
from ait_build.importers.graph import Value, dim_attr, registrar
from ait_build.importers.onnx_values import (Sizes, as_array, as_sizes, attributes, element_type,
                                             is_known, owner, size_div)
from ait_build.ir.dims import Dim, numel, shape_str
from ait_build.ops.opdef import norm_axis

HANDLERS: dict = {}
handles = registrar(HANDLERS)


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
            if i >= len(src):
                raise AitError(f"reshape to {[str(v) for v in sizes]}: the 0 at {i} copies an "
                               f"axis a tensor of rank {len(src)} does not have")
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
        return size_div(total, known.value)
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
    known = t.get(node, 0)
    if isinstance(known, Sizes) and len(sizes) <= 1:  # a size as a scalar or a 1-d list
        return known
    x = t.tensor(node, 0)
    shape = _target_shape(t, x, sizes, bool(attributes(node).get("allowzero")))
    _check_fixed_sizes(t, x.source_shape, shape)
    return t.lower.reshape(x, shape)


def _check_fixed_sizes(t, src: tuple, shape: tuple) -> None:
    """A reshape whose target holds a size where its input has a named dim was written for one
    value of that dim: tracing exporters (torch.onnx.export(dynamo=False)) store the example's
    sizes as constants though the inputs are declared dynamic. Says which value and how to import
    the model at it, instead of a reshape that cannot be inferred."""
    total, target = numel(src), numel(shape)
    if total == target or len(total.terms) != 1 or len(target.terms) != 1:
        return
    (names, count), (kept, fixed) = total.terms[0], target.terms[0]
    missing = list(names)
    for name in kept:
        if name not in missing:
            return
        missing.remove(name)
    if len(missing) != 1 or fixed % count:
        return
    dim, value = missing[0], fixed // count
    given = [f"{name}:" + ",".join(str(value) if str(d) == dim else str(d)
                                   for d in v.source_shape)
             for name, v in t.g.inputs if any(str(d) == dim for d in v.source_shape)]
    raise AitError(f"a reshape of {shape_str(src)} into {shape_str(shape)} holds '{dim}' at "
                   f"{value}: the file was exported for that size (a tracing exporter writes the "
                   f"example's sizes as constants); import it at that size: "
                   + " ".join(f"--input {g}" for g in given))


@handles("Flatten")
def _flatten(t, node):
    x = t.tensor(node, 0)
    given = attributes(node).get("axis", 1)  # in [-rank, rank]: rank makes [all, 1]
    axis = given + x.rank if given < 0 else given
    if not 0 <= axis <= x.rank:
        raise AitError(f"axis {given} is out of range for Flatten of a rank-{x.rank} tensor")
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


@handles("DepthToSpace", "SpaceToDepth")
def _depth_to_space(t, node):
    """[N, C b^2, H, W] <-> [N, C, H b, W b]: DepthToSpace's DCR mode takes the block offset
    from the high channel bits, CRD (PyTorch's pixel_shuffle) from the low ones."""
    attrs, x = attributes(node), t.tensor(node, 0)
    b = int(attrs["blocksize"])
    n, c, h, w = x.source_shape
    if not all(d.is_static for d in (c, h, w)):
        raise AitError(f"{node.op_type} of a {c}x{h}x{w} image (static sizes are needed)")
    block = Dim.of(b)
    mode = attrs.get("mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if node.op_type == "SpaceToDepth":  # its mode since opset 28: CRD keeps the channel first
        hb, wb = Dim.of(h.value // b), Dim.of(w.value // b)
        x = t.lower.reshape(x, (n, c, hb, block, wb, block))
        perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
        return t.lower.reshape(t.lower.permute(x, perm), (n, c * (b * b), hb, wb))
    depth = Dim.of(c.value // (b * b))
    if mode == "DCR":
        x = t.lower.reshape(x, (n, block, block, depth, h, w))
        x = t.lower.permute(x, [0, 3, 4, 1, 5, 2])
    else:
        x = t.lower.reshape(x, (n, depth, block, block, h, w))
        x = t.lower.permute(x, [0, 1, 4, 2, 5, 3])
    return t.lower.reshape(x, (n, depth, h * b, w * b))


def _axes(t, node, index: int, rank: int) -> list:
    axes = attributes(node).get("axes")
    if axes is None:
        axes = t.ints(node, index)
    return [norm_axis(a, rank) for a in axes] if axes is not None else None


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
    if node.input[0] in t.iota:
        size, position = t.iota[node.input[0]]
        for a in sorted(axes):
            position += a <= position
        t.iota[node.output[0]] = (size, position)
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
    axis = norm_axis(attributes(node)["axis"], xs[0].rank)
    # aranges, each with a size-1 last axis, stacked on it: the coordinates of a grid
    if axis == xs[0].rank - 1 and all(
            name in t.iota and t.iota[name][1] < axis for name in node.input):
        t.grids[node.output[0]] = [t.iota[name] for name in node.input]
    return t.lower.concat(xs, axis)


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
        return t.lower.embedding(t.tensor(node, 1), weight, owner(weight))
    return t.lower.gather(t.tensor(node, 0), t.tensor(node, 1), axis)


@handles("GatherElements")
def _gather_elements(t, node):
    return t.lower.gather_elements(t.tensor(node, 0), t.tensor(node, 1),
                                   attributes(node).get("axis", 0))


@handles("GatherND")
def _gather_nd(t, node):
    """data[indices[..., 0], ..., indices[..., k-1]]. Indices stacked from aranges over whole
    axes of data, in order (transformers' mask[batch_idx, kv_idx]), pick every element where
    it is: a reshape (and expand) of data. Others: a gather of data flattened over its first
    k axes by the row-major position the k indices name."""
    if attributes(node).get("batch_dims", 0):
        raise AitError("GatherND with batch_dims")
    data, indices = t.tensor(node, 0), t.tensor(node, 1)
    index_shape, depth = indices.source_shape[:-1], indices.source_shape[-1]
    if not depth.is_static or depth.value > data.rank:
        raise AitError(f"GatherND with an index depth of {depth} into rank {data.rank}")
    k, shape = depth.value, data.source_shape
    out = tuple(index_shape) + tuple(shape[k:])
    grid = t.grids.get(node.input[1])
    if grid and len(grid) == k and [p for _, p in grid] == sorted({p for _, p in grid}) and all(
            size == d for (size, _), d in zip(grid, shape)):
        spread = [Dim.of(1)] * len(index_shape)
        for j, (size, position) in enumerate(grid):
            spread[position] = size
        return t.lower.expand(t.lower.reshape(data, tuple(spread) + tuple(shape[k:])), out)
    if not all(d.is_static for d in shape[:k]):
        raise AitError("GatherND over axes of symbolic size")
    flat, rows = None, 1
    for j in reversed(range(k)):
        n = shape[j].value
        part = t.lower.select(indices, indices.rank - 1, j)
        if k > 1:  # -n..-1 count from the end of their own axis
            part = t.lower.where_(t.lower.binary("less", part, 0),
                                  t.lower.binary("add", part, n), part)
        if rows != 1:
            part = t.lower.binary("mul", part, rows)
        flat = part if flat is None else t.lower.binary("add", part, flat)
        rows *= n
    table = t.lower.reshape(data, (Dim.of(rows),) + tuple(shape[k:])) if k != 1 else data
    return t.lower.gather(table, flat, 0)


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
        axis %= rank
        if step < 0:  # backwards (a flip): the positions it picks, gathered
            size = x.source_shape[axis]
            if not (size.is_static and start.is_static and end.is_static):
                raise AitError("Slice with a negative step over a symbolic size")
            picked = list(range(size.value))[slice(start.value, max(end.value, -2**62), step)]
            x = t.lower.take(x, axis, picked)
            continue
        # up to the axis's own symbolic size (GPT-2's diff: cat[:, 1:seq + 1]): to the end
        end = None if end == x.source_shape[axis] else _bound(end)
        x = t.lower.slice(x, axis, _bound(start), end, step)
    return x


def _bound(d: Dim):
    if d.is_static:
        return None if d.value >= 2**62 else d.value
    name = dim_attr(d)
    if name is None:
        raise AitError(f"a slice bound '{d}' that is not a dim name")
    return name


@handles("Split")
def _split(t, node):
    x = t.tensor(node, 0)
    attrs = attributes(node)
    axis = norm_axis(attrs.get("axis", 0), x.rank)
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
    if node.input[0] in t.iota:
        size, position = t.iota[node.input[0]]
        t.iota[node.output[0]] = (size, position + rank - x.rank)
    if len(x.source_shape) < rank:
        x = t.lower.reshape(x, tuple(src))
    return t.lower.expand(x, out)


@handles("Tile")
def _tile(t, node):
    return t.lower.repeat(t.tensor(node, 0), list(_sizes_input(t, node, 1)))


@handles("ConstantOfShape")
def _constant_of_shape(t, node):
    sizes = as_sizes(t.get(node, 0))
    from onnx import numpy_helper
    value = attributes(node).get("value")
    array = numpy_helper.to_array(value) if value is not None else np.zeros(1, np.float32)
    dtype = element_type(t, {np.dtype(np.float32): 1, np.dtype(np.int64): 7, np.dtype(np.bool_): 9,
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
    if (start_v, step) == (0, 1):
        t.iota[node.output[0]] = (count, 0)
    return t.lower.iota((count,), dtype, start_v, step)
