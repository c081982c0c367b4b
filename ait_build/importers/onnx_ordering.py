"""ONNX TopK, from the pairwise-comparison sort both importers share (ordering.py). The table
joins onnx_ops.HANDLERS."""

from __future__ import annotations

from ait_build.importers import ordering
from ait_build.importers.graph import registrar
from ait_build.importers.onnx_values import attributes

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
