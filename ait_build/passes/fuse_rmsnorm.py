"""Written-out RMS norms -> one rms_norm node: x * rsqrt(mean(x * x, last dim) + eps), times a
weight of the last dim's size when one follows (T5's T5LayerNorm, LLaMA's RMSNorm, and
torch.nn.RMSNorm as torch.export decomposes it).

The importers write the mean over the last dim as a reshape to [rows, C, 1, 1], a global average
pool and a reshape back, and rsqrt as 1 / sqrt; x / sqrt(...) is matched too. Left written out,
the norm is five kernels that keep the squares and their mean in the model's storage type (in
float16 a square overflows past 256); the rms_norm kernel reads each row once and computes its
statistics in float32. Every intermediate must have no other reader.
"""

from __future__ import annotations

from ait_build.ir.dims import Dim
from ait_build.ir.graph import Graph, Node
from ait_build.passes.rewrite import (Uses, add_weight, constant_fill, position, remove_nodes,
                                      summary)


def _scalar_constant(uses: Uses, tensor: str):
    """The value of a one-element `constant` node's output (it broadcasts to nothing larger),
    else None."""
    node = uses.made_by(tensor, "constant")
    if node is None or any(not d.is_static or d.value != 1 for d in node.attrs["shape"]):
        return None
    return constant_fill(uses, tensor)


def _only(uses: Uses, tensor: str, op: str, reader: Node) -> Node | None:
    """The node making `tensor` when it is an `op` and `reader` is its only reader."""
    node = uses.made_by(tensor, op)
    return node if node is not None and uses.only_reader(tensor) is reader else None


def _mean_square(graph: Graph, uses: Uses, tensor: str, reader: Node):
    """(x, eps, nodes) when `tensor` is mean(x * x, last dim, keepdim) + eps, else None."""
    add = _only(uses, tensor, "add", reader)
    if add is None:
        return None
    if add.attrs.get("scalar") is not None and len(add.inputs) == 1:
        mean_t, eps, extra = add.inputs[0], add.attrs["scalar"], []
    elif len(add.inputs) == 2 and add.attrs.get("scalar") is None:
        mean_t, eps_t = add.inputs
        eps = _scalar_constant(uses, eps_t)
        extra = [uses.made_by(eps_t)] if uses.only_reader(eps_t) is add else []
    else:
        return None
    back = _only(uses, mean_t, "reshape", add)
    pool = back and _only(uses, back.inputs[0], "global_avg_pool", back)
    rows = pool and _only(uses, pool.inputs[0], "reshape", pool)
    square = rows and _only(uses, rows.inputs[0], "mul", rows)
    if eps is None or square is None or square.attrs.get("scalar") is not None or \
            len(square.inputs) != 2 or square.inputs[0] != square.inputs[1]:
        return None
    x = square.inputs[0]
    shape = graph.tensors[x].shape
    rows_shape = graph.tensors[rows.output].shape
    if not shape[-1].is_static or len(rows_shape) != 4 or rows_shape[1] != shape[-1] or \
            any(not d.is_static or d.value != 1 for d in rows_shape[2:]) or \
            tuple(graph.tensors[back.output].shape) != tuple(shape[:-1]) + (Dim.of(1),):
        return None
    return x, float(eps), [add, back, pool, rows, square] + extra


def _normalized(graph: Graph, uses: Uses, node: Node):
    """(x, eps, nodes) when `node` computes x / sqrt(mean(x * x) + eps), else None."""
    if node.attrs.get("scalar") is not None or len(node.inputs) != 2:
        return None
    if node.op == "div":
        x, root_t = node.inputs
        root = _only(uses, root_t, "sqrt", node)
        found = root and _mean_square(graph, uses, root.inputs[0], root)
        return found and found[0] == x and (x, found[1], found[2] + [root])
    if node.op != "mul":
        return None
    for x, inv_t in (node.inputs, node.inputs[::-1]):
        inv = _only(uses, inv_t, "div", node)
        if inv is None or inv.attrs.get("scalar") is not None or len(inv.inputs) != 2 or \
                _scalar_constant(uses, inv.inputs[0]) != 1.0:
            continue
        root = _only(uses, inv.inputs[1], "sqrt", inv)
        found = root and _mean_square(graph, uses, root.inputs[0], root)
        if found and found[0] == x:
            one = [uses.made_by(inv.inputs[0])] if uses.only_reader(inv.inputs[0]) is inv else []
            return x, found[1], found[2] + [root, inv] + one
    return None


def _weight_after(graph: Graph, uses: Uses, tensor: str):
    """(mul node, parameter node) when `tensor`'s only reader multiplies it by a parameter of
    the last dim's size (shaped [C] or [1, ..., 1, C]), else None."""
    mul = uses.only_reader(tensor)
    if mul is None or mul.op != "mul" or mul.attrs.get("scalar") is not None or \
            len(mul.inputs) != 2:
        return None
    other = mul.inputs[1] if mul.inputs[0] == tensor else mul.inputs[0]
    param = uses.made_by(other, "parameter")
    c = graph.tensors[tensor].shape[-1]
    shape = graph.tensors[other].shape
    if param is None or not shape or shape[-1] != c or \
            any(not d.is_static or d.value != 1 for d in shape[:-1]):
        return None
    return mul, param


def run(graph: Graph, target) -> str:
    fused = 0
    uses, removed = Uses(graph), set()  # ids of the nodes earlier matches took
    for node in [n for n in graph.nodes if n.op in ("mul", "div")]:
        found = id(node) not in removed and _normalized(graph, uses, node)
        if not found:
            continue
        x, eps, dead = found
        c = graph.tensors[x].shape[-1]
        weighted = _weight_after(graph, uses, node.output)
        attrs, weights, out = {"eps": eps, "affine": weighted is not None}, {}, node.output
        if weighted is not None:
            mul, param = weighted
            value = graph.weights.get(param.weights["value"]).reshape(c.value)
            weights = {"weight": add_weight(graph, f"{node.name}.weight", value, graph.dtype)}
            out = mul.output
            dead += [mul] + ([param] if uses.only_reader(param.output) is mul else [])
        graph.nodes.insert(position(graph, node),
                           Node(node.name, "rms_norm", [x], [out], attrs, weights, node.loc))
        remove_nodes(graph, [node] + dead)
        removed |= {id(n) for n in [node] + dead}
        uses = Uses(graph)
        fused += 1
    return summary((fused, "RMS norms fused"))
