"""Table lookups and constants: embedding (a weight table), gather (from a tensor),
gather_elements (one element per index), permute_elements (its inverse for a
permutation), parameter (a stored weight used as a tensor, e.g. ViT's
class token)."""

from __future__ import annotations

import numpy as np

from ait_build.errors import OpError
from ait_build.ir.dims import Dim, shape_str
from ait_build.ir.dtypes import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES
from ait_build.ops.opdef import Attr, OpDef, ParamSpec, TType, norm_axis, register, require_positive


def _require_indices(t: TType, what: str):
    if t.dtype not in INT_DTYPES:
        raise OpError(f"{what} indices must be int32 or int64, got {t.dtype}")


def _embedding_infer(attrs, inputs, model_dtype):
    _require_indices(inputs[0], "embedding")
    require_positive(attrs, "num_embeddings", "embedding_dim")
    return [TType(tuple(inputs[0].shape) + (Dim.of(attrs["embedding_dim"]),), model_dtype)]


register(OpDef(
    name="embedding", category="gather",
    doc="rows of a [num_embeddings, embedding_dim] weight table, indexed by an int tensor",
    inputs=("indices",),
    attrs=(Attr("num_embeddings", "int", doc="rows of the table"),
           Attr("embedding_dim", "int", doc="the output's last dim")),
    infer=_embedding_infer, model_dtype=True,
    weight_shapes=(("weight", "[num_embeddings, embedding_dim]"),),
    notes="torch.nn.functional.embedding without padding_idx/max_norm; indices outside "
          "[0, num_embeddings) are an error at run time.",
    params=lambda attrs, xs: {"weight": ParamSpec(
        (Dim.of(attrs["num_embeddings"]), Dim.of(attrs["embedding_dim"])), "normal")},
    reference=lambda attrs, xs, ws: [_take(ws["weight"], xs[0], 0, negative=False)]))


def _take(table, indices, axis, negative=True):
    """np.take with a range check; `negative` allows -size..-1 (ONNX Gather), as embedding
    (like PyTorch's) does not."""
    size = table.shape[axis]
    low = -size if negative else 0
    if indices.size and (indices.min() < low or indices.max() >= size):
        raise OpError(f"index out of range [{low}, {size}) (min {indices.min()}, "
                      f"max {indices.max()})")
    return np.take(table, indices, axis=axis)


def _gather_infer(attrs, inputs):
    data, indices = inputs
    _require_indices(indices, "gather")
    axis = norm_axis(attrs["axis"], len(data.shape))
    shape = tuple(data.shape[:axis]) + tuple(indices.shape) + tuple(data.shape[axis + 1:])
    return [TType(shape, data.dtype)]


register(OpDef(
    name="gather", category="gather",
    doc="np.take(data, indices, axis), i.e. ONNX Gather (torch.index_select for rank-1 indices; "
        "not torch.gather); negative indices count from the end",
    inputs=("data", "indices"), attrs=(Attr("axis", "int", 0, doc="the dim of `data` to index"),),
    infer=_gather_infer,
    notes="Not torch.gather: the indices tensor replaces dim `axis` (out.shape = "
          "data.shape[:axis] + indices.shape + data.shape[axis+1:]).",
    reference=lambda attrs, xs, ws: [_take(xs[0], xs[1], attrs["axis"])]))


def _gather_elements_infer(attrs, inputs):
    data, indices = inputs
    _require_indices(indices, "gather_elements")
    if len(indices.shape) != len(data.shape):
        raise OpError(f"gather_elements indices {shape_str(indices.shape)} must have the rank of "
                      f"data {shape_str(data.shape)}")
    axis = norm_axis(attrs["axis"], len(data.shape))
    for d, (a, b) in enumerate(zip(data.shape, indices.shape)):
        if d != axis and a != b:
            raise OpError(f"gather_elements indices {shape_str(indices.shape)} must match data "
                          f"{shape_str(data.shape)} outside axis {axis} (slice data first)")
    return [TType(tuple(indices.shape), data.dtype)]


def _gather_elements(attrs, xs, ws):
    data, indices = xs
    axis = norm_axis(attrs["axis"], data.ndim)
    size = data.shape[axis]
    if indices.size and (indices.min() < -size or indices.max() >= size):
        raise OpError(f"index out of range [{-size}, {size}) (min {indices.min()}, "
                      f"max {indices.max()})")
    return [np.take_along_axis(data, np.where(indices < 0, indices + size, indices), axis)]


register(OpDef(
    name="gather_elements", category="gather",
    doc="out[..., k, ...] = data[..., indices[..., k, ...], ...] along `axis`: one element per "
        "index (ONNX GatherElements, torch.gather); negative indices count from the end",
    inputs=("data", "indices"), attrs=(Attr("axis", "int", 0, doc="the dim of `data` indexed"),),
    infer=_gather_elements_infer, reference=_gather_elements,
    notes="torch.gather(data, axis, indices) where indices has data's sizes outside `axis` "
          "(PyTorch allows smaller ones: slice data to them first).",
))


def _permute_elements_infer(attrs, inputs):
    src, index = inputs
    _require_indices(index, "permute_elements")
    if not src.shape or tuple(index.shape) != tuple(src.shape):
        raise OpError(f"permute_elements index {shape_str(index.shape)} must have the shape of "
                      f"src {shape_str(src.shape)} (rank 1 or more)")
    norm_axis(attrs["axis"], len(src.shape))
    return [TType(tuple(src.shape), src.dtype)]


def _permute_elements(attrs, xs, ws):
    src, index = xs
    axis = norm_axis(attrs["axis"], src.ndim)
    size = src.shape[axis]
    places = np.where(index < 0, index + size, index)
    if not np.array_equal(np.sort(places, axis=axis),
                          np.broadcast_to(np.arange(size).reshape(
                              [-1 if d == axis else 1 for d in range(src.ndim)]), src.shape)):
        raise OpError(f"permute_elements index is not a permutation of 0..{size - 1} along "
                      f"axis {axis}")
    out = np.empty_like(src)
    np.put_along_axis(out, places, src, axis)
    return [out]


register(OpDef(
    name="permute_elements", category="gather",
    doc="out[..., index[..., i, ...], ...] = src[..., i, ...] along `axis`: each element moves "
        "to the place its index gives (the inverse of gather_elements by the same index); the "
        "index is a permutation of 0..n-1 along `axis` (negative places count from the end)",
    inputs=("src", "index"), attrs=(Attr("axis", "int", 0, doc="the dim permuted"),),
    infer=_permute_elements_infer, reference=_permute_elements,
    notes="torch.empty_like(src).scatter_(axis, index, src) where index is a permutation "
          "(argsort's inverse: the importers make it for sorts). The kernels zero the places no "
          "index hits and keep one of the elements that hit the same place; the reference "
          "refuses an index that is not a permutation.",
))


def _parameter_infer(attrs, inputs, model_dtype):
    if not all(d.is_static and d.value >= 1 for d in attrs["shape"]):
        raise OpError(f"parameter shape must be static sizes >= 1, got {shape_str(attrs['shape'])}")
    return [TType(tuple(attrs["shape"]), attrs.get("dtype") or model_dtype)]


def _parameter_params(attrs, inputs):
    dtype = attrs.get("dtype") or ""
    # an index table (Swin's relative_position_index) has no meaningful random fill: zeros
    init = attrs["init"] if dtype in ("",) + FLOAT_DTYPES else "zeros"
    return {"value": ParamSpec(tuple(attrs["shape"]), init, dtype)}


register(OpDef(
    name="parameter", category="gather",
    doc="a stored weight (named `<name>` itself, not `<name>.weight`) used as a tensor",
    inputs=(), attrs=(Attr("shape", "shape", doc="static sizes"),
                      Attr("init", "str", "normal", ("normal", "zeros", "ones", "small"),
                           doc="the fill under `weights: {random: ...}` (ints and bools: zeros)"),
                      Attr("dtype", "dtype", None, ALL_DTYPES,
                           doc="default: the model dtype; an int type for index tables")),
    infer=_parameter_infer, model_dtype=True,
    weight_shapes=(("value", "`shape`"),),
    notes="nn.Parameter or a buffer: the weight is stored under the node's own name, or under "
          "NAME with `weights: {value: NAME}` (ViT's class_token); `/NAME` skips the block prefix.",
    params=_parameter_params,
    reference=lambda attrs, xs, ws: [ws["value"]]))
