"""ONNX ops that order or place elements by position: TopK (the pairwise-comparison sort both
importers share, ordering.py), ScatterElements and ScatterND (scatter.py). The table joins
onnx_ops.HANDLERS."""

from __future__ import annotations

from ait_build.errors import AitError
from ait_build.importers import ordering, scatter
from ait_build.importers.graph import registrar
from ait_build.importers.onnx_values import attributes
from ait_build.ir.dims import numel

HANDLERS: dict = {}
handles = registrar(HANDLERS)


@handles("TopK")
def _topk(t, node):
    """Values and int64 indices of the K largest (smallest) along `axis`, in order; ties in
    position order, as ONNX asks."""
    attrs, x = attributes(node), t.tensor(node, 0)
    (k,) = t.ints(node, 1)
    return list(ordering.sort(t.lower, x, attrs.get("axis", -1), bool(attrs.get("largest", 1)),
                              k, "TopK"))


def _reduction(attrs: dict) -> str:
    reduction = attrs.get("reduction", b"none")
    return reduction.decode() if isinstance(reduction, bytes) else reduction


@handles("ScatterElements")
def _scatter_elements(t, node):
    attrs = attributes(node)
    reduction = _reduction(attrs)
    return scatter.scatter_elements(t.lower, t.tensor(node, 0), attrs.get("axis", 0),
                                    t.tensor(node, 1), t.tensor(node, 2), reduction,
                                    what="ScatterElements")


@handles("ScatterND")
def _scatter_nd(t, node):
    """data[indices[..., :]] = updates: the q indexed leading axes merged into one, each index
    row a position there (the exporters' form of a slice assignment), then rows put along it."""
    reduction = _reduction(attributes(node))
    if reduction not in ("none", "add"):
        raise AitError(f"ScatterND with reduction '{reduction}' (none and add are taken)")
    data, indices, updates = (t.tensor(node, i) for i in range(3))
    q = indices.source_shape[-1].value
    shape, count = tuple(data.source_shape), numel(indices.source_shape[:-1])
    if q is None or any(not d.is_static for d in shape[:q]):
        raise AitError(f"ScatterND into axes {[str(d) for d in shape[:q or 1]]} (static sizes "
                       "are taken)")
    if not count.is_static:
        raise AitError(f"ScatterND of {count} index rows (only a static number)")
    flat = t.lower.flat_index([t.lower.select(indices, -1, j) for j in range(q)], shape[:q])
    rows = (numel(shape[:q]),) + shape[q:]
    out = scatter.put_along(t.lower, t.lower.reshape(data, rows), 0,
                            t.lower.reshape(flat, (count,)),
                            t.lower.reshape(updates, (count,) + shape[q:]),
                            reduction == "add", "ScatterND")
    return t.lower.reshape(out, shape)
