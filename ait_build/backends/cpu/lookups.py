"""cpu lowering of table lookups whose table is a weight: embedding (a gather of float32 rows)
and parameter (a weight used as a tensor)."""

from __future__ import annotations

from ait_build.codegen.cexpr import elements
from ait_build.codegen.data_movement import copy, gather
from ait_build.ir.dims import Dim


def lower_embedding(lw) -> None:
    node = lw.node
    table = (Dim.of(node.attrs["num_embeddings"]), Dim.of(node.attrs["embedding_dim"]))
    gather(lw, node.output, lw.weight("weight"), table, lw.ctype(node.output), node.inputs[0], 0,
           negative=False)


def lower_parameter(lw) -> None:
    """A weight used as a tensor: read in place, copied only when it is a model output."""
    node = lw.node
    if not lw.view_weight(node.output, "value"):
        n = elements(lw.shape(node.output))
        copy(lw, lw.dst(node.output), lw.weight("value"), lw.ctype(node.output), [n], [1], [1])
