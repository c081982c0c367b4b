"""Shape and data-movement ops: reshape, flatten, permute, transpose, expand, concat, split,
slice, pad, roll.

Reference functions that need concrete sizes read `attrs["_env"]` (dim name -> value) and
`attrs["_out_shapes"]`, which the executor adds for each call.
"""

from __future__ import annotations

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dims import Dim, numel, shape_str
from ait_build.ops.opdef import Attr, OpDef, TType, norm_axis, register, same_float_dtype


def _contiguous(x):
    # np.ascontiguousarray would turn a rank-0 array into rank 1
    return np.asarray(x, order="C")


def _reshape_to(attrs, xs, ws):
    return [xs[0].reshape(attrs["_out_shapes"][0])]


def _reshape_infer(attrs, inputs):
    x = inputs[0]
    target = list(attrs["shape"])
    unknown = [i for i, d in enumerate(target) if d == -1]
    if len(unknown) > 1:
        raise OpError("reshape shape may hold at most one -1")
    for i, d in enumerate(target):
        if d == 0:
            if i >= len(x.shape):
                raise OpError(f"reshape: 0 at position {i} copies a dim the input lacks")
            target[i] = x.shape[i]
        elif d != -1 and d.is_static and d.value < 0:
            raise OpError(f"reshape: bad size {d}")
    total = numel(x.shape)
    known = numel([d for d in target if d != -1])
    if unknown:
        rest = total.exact_div(known)
        if rest is None:
            raise OpError(f"reshape: cannot infer -1: {shape_str(x.shape)} has {total} elements, "
                          f"not a multiple of {known}")
        target[unknown[0]] = rest
    elif known != total:
        raise OpError(f"reshape: {shape_str(x.shape)} ({total} elements) cannot become "
                      f"{shape_str(target)} ({known} elements)")
    return [TType(tuple(target), x.dtype)]


register(OpDef(
    name="reshape", category="shape",
    doc="new shape with the same elements; entries are ints, dim names, -1 (inferred) or 0 (copy)",
    attrs=(Attr("shape", "shape", doc="the new shape"),), infer=_reshape_infer,
    reference=_reshape_to,
    notes="torch.reshape, plus ONNX's 0 (copy the input dim at that position) and dim names."))


def _flatten_infer(attrs, inputs):
    x = inputs[0]
    rank = len(x.shape)
    if rank == 0:
        return [TType((Dim.of(1),), x.dtype)]
    start, end = norm_axis(attrs["start_dim"], rank), norm_axis(attrs["end_dim"], rank)
    if start > end:
        raise OpError(f"flatten: start_dim {attrs['start_dim']} is after end_dim {attrs['end_dim']}")
    shape = tuple(x.shape[:start]) + (numel(x.shape[start:end + 1]),) + tuple(x.shape[end + 1:])
    return [TType(shape, x.dtype)]


register(OpDef(
    name="flatten", category="shape", doc="merges dims start_dim..end_dim into one",
    attrs=(Attr("start_dim", "int", 1, doc="first dim merged"),
           Attr("end_dim", "int", -1, doc="last dim merged (inclusive)")),
    infer=_flatten_infer, reference=_reshape_to,
    notes="nn.Flatten: start_dim defaults to 1 (torch.flatten's default is 0)."))


def _permute_infer(attrs, inputs):
    x = inputs[0]
    dims = attrs["dims"]
    rank = len(x.shape)
    if sorted(norm_axis(d, rank) for d in dims) != list(range(rank)) or len(dims) != rank:
        raise OpError(f"permute dims {list(dims)} are not a permutation of 0..{rank - 1}")
    return [TType(tuple(x.shape[norm_axis(d, rank)] for d in dims), x.dtype)]


register(OpDef(
    name="permute", category="shape", doc="reorders dims: out.shape[i] = x.shape[dims[i]]",
    attrs=(Attr("dims", "ints", doc="a permutation of 0..rank-1 (negative allowed)"),),
    infer=_permute_infer, notes="torch.permute.",
    reference=lambda attrs, xs, ws: [_contiguous(np.transpose(xs[0], attrs["dims"]))]))


def _transpose_dims(attrs, rank):
    a, b = norm_axis(attrs["dim0"], rank), norm_axis(attrs["dim1"], rank)
    dims = list(range(rank))
    dims[a], dims[b] = dims[b], dims[a]
    return dims


register(OpDef(
    name="transpose", category="shape", doc="swaps two dims",
    attrs=(Attr("dim0", "int", doc="one dim"), Attr("dim1", "int", doc="the other dim")),
    notes="torch.transpose.",
    infer=lambda attrs, xs: _permute_infer({"dims": _transpose_dims(attrs, len(xs[0].shape))}, xs),
    reference=lambda attrs, xs, ws: [_contiguous(
        np.transpose(xs[0], _transpose_dims(attrs, xs[0].ndim)))]))


def _expand_infer(attrs, inputs):
    x = inputs[0]
    target = list(attrs["shape"])
    if len(target) < len(x.shape):
        raise OpError(f"expand: target {shape_str(target)} has fewer dims than {shape_str(x.shape)}")
    offset = len(target) - len(x.shape)
    for t in target:
        if t != -1 and t.is_static and t.value < 1:
            raise OpError(f"expand: bad size {t} (sizes are >= 1, or -1 to keep a dim)")
    for i, d in enumerate(x.shape):
        t = target[offset + i]
        if t == -1:
            target[offset + i] = d
        elif d != 1 and d != t:
            raise OpError(f"expand: dim {i} of size {d} cannot become {t}")
    if any(d == -1 for d in target):
        raise OpError("expand: -1 is only allowed for existing dims")
    return [TType(tuple(target), x.dtype)]


register(OpDef(
    name="expand", category="shape", doc="broadcasts size-1 dims to a larger shape (-1 keeps a dim)",
    attrs=(Attr("shape", "shape", doc="the target shape; -1 keeps the input's dim"),),
    infer=_expand_infer,
    notes="Tensor.expand; sizes must be >= 1 (no zero-size tensors).",
    reference=lambda attrs, xs, ws: [_contiguous(
        np.broadcast_to(xs[0], attrs["_out_shapes"][0]))]))


def _concat_infer(attrs, inputs):
    if not inputs:
        raise OpError("concat needs at least one input")
    rank = len(inputs[0].shape)
    axis = norm_axis(attrs["axis"], rank)
    total = Dim.of(0)
    for t in inputs:
        if len(t.shape) != rank or any(a != b for i, (a, b) in enumerate(zip(t.shape, inputs[0].shape))
                                       if i != axis):
            raise OpError("concat inputs differ outside the concat axis: "
                          + ", ".join(shape_str(t.shape) for t in inputs))
        total = total + t.shape[axis]
    shape = list(inputs[0].shape)
    shape[axis] = total
    return [TType(tuple(shape), same_float_dtype(inputs))]


register(OpDef(
    name="concat", category="shape", doc="joins tensors along `axis`", inputs=("*xs",),
    attrs=(Attr("axis", "int", doc="the dim joined along"),), infer=_concat_infer,
    notes="torch.cat; inputs share one dtype.",
    reference=lambda attrs, xs, ws: [np.concatenate(xs, axis=attrs["axis"])]))


MAX_SPLIT = 1 << 16  # outputs of one split: each is a tensor, a node's output, a kernel argument


def split_sizes(attrs, size: Dim) -> list:
    if attrs.get("sizes") and attrs.get("sections"):
        raise OpError("split takes 'sections' or 'sizes', not both")
    parts = len(attrs.get("sizes") or ()) or attrs.get("sections") or 0
    if parts > MAX_SPLIT:
        raise OpError(f"split into {parts} parts; the limit is {MAX_SPLIT}")
    if attrs.get("sizes"):
        if min(attrs["sizes"]) < 1:
            raise OpError(f"split sizes {list(attrs['sizes'])} must all be >= 1")
        sizes = [Dim.of(s) for s in attrs["sizes"]]
        if sum(sizes, Dim.of(0)) != size:
            raise OpError(f"split sizes {list(attrs['sizes'])} do not add up to {size}")
        return sizes
    parts = attrs.get("sections") or 0
    if parts < 1:
        raise OpError("split needs 'sections' (>= 1) or 'sizes'")
    each = size.exact_div(parts)
    if each is None:
        raise OpError(f"split: size {size} does not divide into {parts} equal sections")
    return [each] * parts


def _split_infer(attrs, inputs):
    x = inputs[0]
    axis = norm_axis(attrs["axis"], len(x.shape))
    outs = []
    for size in split_sizes(attrs, x.shape[axis]):
        shape = list(x.shape)
        shape[axis] = size
        outs.append(TType(tuple(shape), x.dtype))
    return outs


def _split_reference(attrs, xs, ws):
    axis = norm_axis(attrs["axis"], xs[0].ndim)
    sizes = [s[axis] for s in attrs["_out_shapes"]]
    return [_contiguous(part)
            for part in np.split(xs[0], np.cumsum(sizes)[:-1], axis=axis)]


register(OpDef(
    name="split", category="shape", doc="cuts a tensor into parts along `axis` (several outputs)",
    attrs=(Attr("axis", "int", -1, doc="the dim cut"),
           Attr("sections", "int", 0, doc="the number of equal parts"),
           Attr("sizes", "ints", (), doc="explicit part sizes, each >= 1")),
    notes="`sizes` is torch.split with a list; `sections` is torch.chunk but must divide exactly. "
          "torch.split(x, n) (parts of size n) is written with `sizes`. Outputs are `<name>:0`, "
          "`<name>:1`, ...",
    outputs=lambda attrs: len(attrs["sizes"]) if attrs.get("sizes") else max(1, attrs.get("sections") or 1),
    infer=_split_infer, reference=_split_reference))


def slice_range(attrs, size: Dim) -> tuple:
    """(first index, length) of the slice of a dim of `size`, with Python's semantics: negative
    bounds count from the end, static bounds are clamped. Kernels read their offset from here."""
    start, end, step = Dim.of(attrs["start"]), attrs["end"], attrs["step"]
    if size.is_static and start.is_static and (end is None or end.is_static):
        picked = range(size.value)[start.value:None if end is None else end.value:step]
        return Dim.of(picked.start), Dim.of(len(picked))

    def resolve(bound):  # symbolic: not clamped; the executor checks the bounds at run time
        return size + bound if bound.is_static and bound.value < 0 else bound
    start = resolve(start)
    span = (size if end is None else resolve(Dim.of(end))) - start
    if step == 1:
        return start, span
    # ceil(span / step), a polynomial where the dim terms of span divide by the step
    rest = (span - 1).floor_div(step)
    if rest is None:
        end = "" if attrs["end"] is None else attrs["end"]
        raise OpError(f"slice [{attrs['start']}:{end}:{step}] of a dim of size {size}: over a "
                      f"symbolic size the sliced length ({span}) must be a multiple of the step "
                      f"{step} plus a constant (its dim terms divisible by {step})")
    return start, rest + 1


def _slice_infer(attrs, inputs):
    x = inputs[0]
    axis = norm_axis(attrs["axis"], len(x.shape))
    if attrs["step"] < 1:
        raise OpError("slice step must be >= 1")
    _, length = slice_range(attrs, x.shape[axis])
    if length.is_static and length.value < 1:  # zero-size tensors are not supported downstream
        raise OpError(f"slice [{attrs['start']}:{attrs['end']}:{attrs['step']}] of a dim of size "
                      f"{x.shape[axis]} is empty")
    shape = list(x.shape)
    shape[axis] = length
    return [TType(tuple(shape), x.dtype)]


def _slice_check_ranges(attrs, inputs, ranges):
    """Symbolic bounds are not clamped (slice_range), so each must stay inside the dim at every
    value of the dims: the kernel would read outside its input where one does not."""
    x = inputs[0]
    size = x.shape[norm_axis(attrs["axis"], len(x.shape))]
    start, length = slice_range(attrs, size)
    if size.is_static and start.is_static and length.is_static:
        return  # clamped
    last = start + (length - 1) * attrs["step"]
    for value, what in ((start, "starts before the dim's first element"),
                        (size - (last + 1), "ends past the dim's last element")):
        # the smallest value: each dim at the end of its range that lowers the terms it is in
        # (`seq - batch` is lowest at seq's min and batch's max), besides all at min and all at max
        lowering = {n: r.max if any(c < 0 for m, c in value.terms if n in m) else r.min
                    for n, r in ranges.items()}
        for env in ({n: r.min for n, r in ranges.items()}, {n: r.max for n, r in ranges.items()},
                    lowering):
            if value.eval(env) < 0:
                at = ", ".join(f"{n}={env[n]}" for n in sorted(value.symbols))
                end = "" if attrs["end"] is None else attrs["end"]
                raise OpError(f"slice [{attrs['start']}:{end}] of a dim of size {size} "
                              f"{what} at {at} (bounds beside a symbolic size are not clamped): "
                              "keep them inside the dim at every value of its range")


def _slice_reference(attrs, xs, ws):
    env = attrs["_env"]
    axis = norm_axis(attrs["axis"], xs[0].ndim)
    start = Dim.of(attrs["start"]).eval(env)
    end = None if attrs["end"] is None else Dim.of(attrs["end"]).eval(env)
    index = [slice(None)] * xs[0].ndim
    index[axis] = slice(start, end, attrs["step"])
    out = _contiguous(xs[0][tuple(index)])
    if out.shape[axis] != attrs["_out_shapes"][0][axis]:  # symbolic bounds past the dim's end
        raise OpError(f"slice [{start}:{end}] of a dim of size {xs[0].shape[axis]} gives "
                      f"{out.shape[axis]} elements, the graph expects {attrs['_out_shapes'][0][axis]}")
    return [out]


register(OpDef(
    name="slice", category="shape", doc="x[start:end:step] along `axis` (bounds may be dim names)",
    attrs=(Attr("axis", "int", doc="the dim sliced"),
           Attr("start", "dim", 0, doc="first index (negative: from the end)"),
           Attr("end", "dim_or_none", None, doc="one past the last index; null: the dim's end"),
           Attr("step", "int", 1, doc=">= 1")),
    notes="Python/PyTorch slicing (negative bounds count from the end, static bounds are "
          "clamped); an empty result is an error. Over a symbolic size a step > 1 needs the "
          "sliced length's dim terms to divide by it (`320*frames + 80` by 5 or 320, not "
          "`seq` by 2), so the result's size stays a polynomial. Beside a "
          "symbolic size nothing is clamped: each bound must stay inside the dim at every value "
          "of its dims' ranges (slice [0:4] of `seq` needs seq's min >= 4).",
    infer=_slice_infer, reference=_slice_reference, check_ranges=_slice_check_ranges))


def _pad_infer(attrs, inputs):
    x = inputs[0]
    pads = attrs["pads"]
    if not x.shape:
        raise OpError("pad needs a tensor of rank >= 1")
    if len(pads) != 2 * len(x.shape) or any(p < 0 for p in pads):
        raise OpError(f"pad: 'pads' needs {2 * len(x.shape)} non-negative ints "
                      "(before, after for each dim), got " + str(list(pads)))
    shape = tuple(d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(x.shape))
    return [TType(shape, x.dtype)]


register(OpDef(
    name="pad", category="shape", doc="constant padding; pads = [before0, after0, before1, ...]",
    attrs=(Attr("pads", "ints", doc="2 * rank sizes: [before0, after0, before1, after1, ...]"),
           Attr("value", "float", 0.0, doc="the fill")), infer=_pad_infer,
    notes="torch.nn.functional.pad(mode='constant'), but `pads` lists dim 0 FIRST and every dim "
          "(F.pad lists the last dim first and may stop early); no negative pads.",
    reference=lambda attrs, xs, ws: [np.pad(
        xs[0], [(attrs["pads"][2 * i], attrs["pads"][2 * i + 1]) for i in range(xs[0].ndim)],
        constant_values=attrs["value"])]))



def roll_shifts(attrs, shape) -> list:
    """[(axis, shift in [0, size))] of a roll over a tensor of `shape` (sizes of rolled dims are
    static); shifts of 0 are dropped."""
    if len(attrs["shifts"]) != len(attrs["dims"]) or not attrs["dims"]:
        raise OpError(f"roll needs one shift per dim, got shifts {list(attrs['shifts'])} and "
                      f"dims {list(attrs['dims'])}")
    out, seen = [], set()
    for shift, d in zip(attrs["shifts"], attrs["dims"]):
        axis = norm_axis(d, len(shape))
        if axis in seen:
            raise OpError(f"roll dims {list(attrs['dims'])} name dim {axis} twice")
        seen.add(axis)
        size = shape[axis]
        if not size.is_static:
            raise OpError(f"roll over dim {axis} needs a static size, got '{size}'")
        if shift % size.value:
            out.append((axis, shift % size.value))
    return out


def _roll_infer(attrs, inputs):
    roll_shifts(attrs, inputs[0].shape)
    return [inputs[0]]


def _roll_reference(attrs, xs, ws):
    shifts = roll_shifts(attrs, [Dim.of(n) for n in xs[0].shape])
    if not shifts:
        return [xs[0]]
    axes, amounts = zip(*shifts)
    return [np.roll(xs[0], amounts, axis=axes)]


register(OpDef(
    name="roll", category="shape",
    doc="shifts elements along dims, wrapping around: out[(i + shift) % n] = x[i]",
    attrs=(Attr("shifts", "ints", doc="one shift per dim (negative: toward index 0)"),
           Attr("dims", "ints", doc="the dims rolled; their sizes must be static")),
    notes="torch.roll(x, shifts, dims) with dims given (no flattened roll).",
    infer=_roll_infer, reference=_roll_reference))
