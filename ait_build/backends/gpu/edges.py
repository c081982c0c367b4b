"""A GPU library's edges and weight lookups: tensors stay in the model's dtype in device memory,
inputs and outputs are device pointers in that dtype (no conversion kernels), and tables that are
weights are stored in the model's dtype too."""

from __future__ import annotations

from ait_build.codegen.cexpr import elements
from ait_build.codegen.data_movement import copy, gather
from ait_build.codegen.plan import Lowerer
from ait_build.ir.dims import Dim


def lower_inputs(plan) -> None:
    """Inputs are device buffers in the model's dtype: read in place."""
    for i, name in enumerate(plan.graph.inputs):
        ctype = plan.ctypes[plan.graph.tensors[name].dtype]
        plan.add_value(name, ctype, f"static_cast<const {ctype}*>(in[{i}])", "input", const=True)


def lower_outputs(plan) -> None:
    """Outputs not written in place (views, weights, inputs) are copied into the user's buffer."""
    lw = Lowerer(plan, None)
    for i, name in enumerate(plan.graph.outputs):
        value = plan.values[name]
        if value.kind == "output":
            continue
        t = plan.graph.tensors[name]
        ctype = plan.ctypes[t.dtype]
        n = elements(t.shape)
        copy(lw, f"static_cast<{ctype}*>(out[{i}])", lw.src(name), ctype, [n], [1], [1],
             "output_copy")


def lower_embedding(lw) -> None:
    """The table in the model's dtype, gathered by row (ids are checked on the device)."""
    node = lw.node
    table = (Dim.of(node.attrs["num_embeddings"]), Dim.of(node.attrs["embedding_dim"]))
    weight = lw.weight("weight", dtype=lw.dtype(node.output))
    gather(lw, node.output, weight, table, lw.ctype(node.output), node.inputs[0], 0,
           negative=False)


def lower_parameter(lw) -> None:
    """A weight used as a tensor, stored in the model's dtype: read in place, copied only when it
    is a model output."""
    out = lw.node.output
    var = lw.weight("value", dtype=lw.dtype(out))
    if out not in lw.plan.graph.outputs:
        lw.plan.add_value(out, lw.ctype(out), var, "view", const=True)
        return
    n = elements(lw.shape(out))
    copy(lw, lw.dst(out), var, lw.ctype(out), [n], [1], [1])
