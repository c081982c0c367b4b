"""Lowering of data movement on any backend: reshape/flatten/identity (views when the memory plan
allows), permute, transpose, expand, slice, concat, split, pad (all one strided-copy template
with their own strides and offsets) and gather. Each backend renders them into its own `copy`
and `gather` templates, which take the same context and parameters."""

from __future__ import annotations

from ait_build.codegen.cexpr import broadcast_strides, cexpr, collapse, contiguous_strides, elements
from ait_build.codegen.elementwise import Operand, elementwise, literal
from ait_build.codegen.kernel import make_kernel
from ait_build.codegen.render import c_string
from ait_build.ir.dims import Dim
from ait_build.ops.opdef import norm_axis
from ait_build.ops.shape import slice_range, split_sizes


def copy(lw, out_var: str, in_var: str, ctype: str, sizes, in_strides, out_strides,
         label: str = "copy") -> None:
    """out[sum i*os] = in[sum i*is] over `sizes` (strides in elements; pointers pre-offset)."""
    sizes, (ist, ost) = collapse(sizes, in_strides, out_strides)
    rank = len(sizes)
    context = dict(rank=rank, rows=" * ".join(f"n{k}" for k in range(rank - 1)) or "1",
                   outer_dims=tuple(reversed(range(rank - 1))), ctype=ctype)
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "in")]
    params += [("int64_t", f"{p}{k}") for p in ("n", "is", "os") for k in range(rank)]
    kernel = make_kernel(label, lw.node.op if lw.node is not None else "copy",
                         lw.template("copy"), context, params)
    args = [out_var, in_var] + [cexpr(v) for v in list(sizes) + list(ist) + list(ost)]
    lw.call(kernel, args)


def offset(var: str, elements_: Dim) -> str:
    return var if elements_ == 0 else f"{var} + {cexpr(elements_)}"


def copy_whole(lw, out: str, src: str) -> None:
    n = elements(lw.shape(out))
    copy(lw, lw.dst(out), lw.src(src), lw.ctype(out), [n], [1], [1])


def lower_view(lw) -> None:
    """reshape, flatten, identity: the same bytes under another shape."""
    node = lw.node
    if not lw.view(node.output, node.inputs[0]):
        copy_whole(lw, node.output, node.inputs[0])


def permute_strides(lw) -> tuple:
    """A permute's (or transpose's) output shape and, per output axis, the input's and the
    output's strides."""
    node = lw.node
    x, out = node.inputs[0], node.output
    rank = len(lw.shape(x))
    if node.op == "transpose":
        dims = list(range(rank))
        a, b = norm_axis(node.attrs["dim0"], rank), norm_axis(node.attrs["dim1"], rank)
        dims[a], dims[b] = dims[b], dims[a]
    else:
        dims = [norm_axis(d, rank) for d in node.attrs["dims"]]
    src = contiguous_strides(lw.shape(x))
    out_shape = lw.shape(out)
    return out_shape, [src[d] for d in dims], contiguous_strides(out_shape)


def inner_transpose(lw) -> tuple | None:
    """(sizes, input strides, output strides) after merging, when a permute swaps the two
    innermost axes: the output's innermost walks the input far apart while the input's
    innermost is the output's second (a CNN's NCHW -> NHWC, a layout change back); else None.
    Backends give these a tiled kernel of their own."""
    return transposed(*permute_strides(lw))


def transposed(sizes, in_strides, out_strides) -> tuple | None:
    """(sizes, input strides, output strides) after merging, when the copy swaps the two
    innermost axes (see inner_transpose); else None."""
    sizes, (ist, ost) = collapse(sizes, in_strides, out_strides)
    if len(sizes) < 2 or not (ist[-2] == 1 and ost[-1] == 1 and ist[-1] != 1):
        return None
    return sizes, ist, ost


def call_transpose(lw, swap: tuple, template: str, src: str | None = None,
                   label: str = "transpose", **context) -> None:
    """One call of a backend's transpose kernel for `inner_transpose`'s (sizes, input strides,
    output strides), reading `src` (default: the node's input); `context`: the template's own
    constants."""
    node = lw.node
    sizes, ist, ost = swap
    rank = len(sizes)
    ctype = lw.ctype(node.output)
    context.update(rank=rank, rows=" * ".join(f"n{k}" for k in range(rank - 2)) or "1",
                   outer_dims=tuple(reversed(range(rank - 2))), ctype=ctype)
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "in")]
    params += [("int64_t", f"{p}{k}") for p in ("n", "is", "os") for k in range(rank)]
    kernel = make_kernel(label, node.op, template, context, params)
    args = [lw.dst(node.output), src or lw.src(node.inputs[0])]
    lw.call(kernel, args + [cexpr(v) for v in list(sizes) + list(ist) + list(ost)])


def lower_permute(lw) -> None:
    node = lw.node
    out_shape, in_strides, out_strides = permute_strides(lw)
    copy(lw, lw.dst(node.output), lw.src(node.inputs[0]), lw.ctype(node.output), out_shape,
         in_strides, out_strides, "permute")


def lower_expand(lw) -> None:
    node = lw.node
    out_shape = lw.shape(node.output)
    copy(lw, lw.dst(node.output), lw.src(node.inputs[0]), lw.ctype(node.output), out_shape,
         broadcast_strides(lw.shape(node.inputs[0]), out_shape), contiguous_strides(out_shape),
         "expand")


def lower_slice(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    shape = lw.shape(x)
    axis = norm_axis(node.attrs["axis"], len(shape))
    start, _ = slice_range(node.attrs, shape[axis])  # Python's rules, as shape inference
    strides = list(contiguous_strides(shape))
    first = start * strides[axis]
    strides[axis] = strides[axis] * node.attrs["step"]
    out_shape = lw.shape(out)
    copy(lw, lw.dst(out), offset(lw.src(x), first), lw.ctype(out), out_shape, strides,
         contiguous_strides(out_shape), "slice")


def lower_concat(lw) -> None:
    node = lw.node
    out = node.output
    out_shape = lw.shape(out)
    axis = norm_axis(node.attrs["axis"], len(out_shape))
    out_strides = contiguous_strides(out_shape)
    dst = lw.dst(out)
    at = Dim.of(0)
    for x in node.inputs:
        shape = lw.shape(x)
        copy(lw, offset(dst, at * out_strides[axis]), lw.src(x), lw.ctype(out), shape,
             contiguous_strides(shape), out_strides, "concat")
        at = at + shape[axis]


def innermost_widths(lw, max_pieces: int) -> tuple | None:
    """The pieces' widths of a concat along the innermost axis (NHWC channel concats) where each
    is known at build time and there are at most `max_pieces`; else None (lower_concat's copy
    per piece). The backends' one-kernel concats take such concats."""
    node = lw.node
    rank = len(lw.shape(node.output))
    widths = [Dim.of(lw.shape(x)[-1]) for x in node.inputs]
    if (norm_axis(node.attrs["axis"], rank) != rank - 1 or len(widths) > max_pieces
            or not all(w.is_static for w in widths)):
        return None
    return tuple(w.value for w in widths)


def lower_split(lw) -> None:
    node = lw.node
    x = node.inputs[0]
    shape = lw.shape(x)
    axis = norm_axis(node.attrs["axis"], len(shape))
    strides = contiguous_strides(shape)
    at = Dim.of(0)
    for out, size in zip(node.outputs, split_sizes(node.attrs, shape[axis])):
        out_shape = lw.shape(out)
        copy(lw, lw.dst(out), offset(lw.src(x), at * strides[axis]), lw.ctype(out), out_shape,
             strides, contiguous_strides(out_shape), "split")
        at = at + size


def lower_pad(lw) -> None:
    node = lw.node
    x, out = node.inputs[0], node.output
    pads = node.attrs["pads"]
    out_shape = lw.shape(out)
    dst = lw.dst(out)
    value = literal(node.attrs["value"], lw.dtype(out)) if lw.ctype(out) != "uint8_t" \
        else str(int(bool(node.attrs["value"])))
    elementwise(lw, "fill", Operand(dst, lw.ctype(out), out_shape), [], value)
    out_strides = contiguous_strides(out_shape)
    first = sum((Dim.of(pads[2 * i]) * s for i, s in enumerate(out_strides)), Dim.of(0))
    shape = lw.shape(x)
    copy(lw, offset(dst, first), lw.src(x), lw.ctype(out), shape, contiguous_strides(shape),
         out_strides, "pad")


def gather(lw, out: str, data_var: str, data_shape, ctype: str, indices: str, axis: int,
           negative: bool) -> None:
    outer = elements(data_shape[:axis])
    inner = elements(data_shape[axis + 1:])
    idx_ctype = lw.ctype(indices)
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "data"), (f"const {idx_ctype}*", "idx"),
              ("int64_t", "outer"), ("int64_t", "L"), ("int64_t", "inner"), ("int64_t", "I"),
              ("const char*", "what")]
    kernel = make_kernel("gather", lw.node.op, lw.template("gather"),
                         dict(ctype=ctype, negative=negative), params)
    lw.call(kernel, [lw.dst(out), data_var, lw.src(indices), cexpr(outer),
                     cexpr(data_shape[axis]), cexpr(inner), cexpr(elements(lw.shape(indices))),
                     c_string(f"{lw.node.op} '{lw.node.name}'")])


def lower_gather(lw) -> None:
    node = lw.node
    data, indices = node.inputs
    shape = lw.shape(data)
    gather(lw, node.output, lw.src(data), shape, lw.ctype(data), indices,
           norm_axis(node.attrs["axis"], len(shape)), negative=True)


def lower_elements_by_index(lw) -> None:
    """gather_elements (out[a, k, c] = data[a, idx[a, k, c], c]) and its inverse for a
    permutation, permute_elements (out[a, idx[a, k, c], c] = data[a, k, c]): data [outer, L,
    inner], the indices [outer, K, inner] (K = L for a permutation); the op's sizes agree
    outside the axis, so three products and K describe every tensor. The kernel and template
    are the op's."""
    node = lw.node
    data, indices = node.inputs
    shape, ishape = lw.shape(data), lw.shape(indices)
    axis = norm_axis(node.attrs["axis"], len(shape))
    ctype = lw.ctype(data)
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "data"),
              (f"const {lw.ctype(indices)}*", "idx"), ("int64_t", "outer"), ("int64_t", "L"),
              ("int64_t", "K"), ("int64_t", "inner"), ("const char*", "what")]
    kernel = make_kernel(node.op, node.op, lw.template(node.op), dict(ctype=ctype), params)
    lw.call(kernel, [lw.dst(node.output), lw.src(data), lw.src(indices),
                     cexpr(elements(shape[:axis])), cexpr(shape[axis]), cexpr(ishape[axis]),
                     cexpr(elements(shape[axis + 1:])), c_string(f"{node.op} '{node.name}'")])
