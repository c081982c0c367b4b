"""Written-out RMS norms -> one rms_norm node: x * rsqrt(mean(x * x, last dim) + eps), times a
weight of the last dim's size when one follows (T5's T5LayerNorm, LLaMA's RMSNorm, and
torch.nn.RMSNorm as torch.export decomposes it). L2 normalizations, x / max(||x||, eps) over the
last dim (F.normalize: Swin V2's cosine attention; CLIP's embeddings without the clamp), become
rms_norm too: x / sqrt(sum(x*x) + eps^2) is x / sqrt(mean(x*x) + eps^2 / C) times 1 / sqrt(C),
equal to it but for vectors of norm under about eps.

The importers write the mean over the last dim as a reshape to [rows, C, 1, 1], a global average
pool and a reshape back, and rsqrt as 1 / sqrt; x / sqrt(...) is matched too. Left written out,
the norm is five kernels that keep the squares and their mean in the model's storage type (in
float16 a square overflows past 256); the rms_norm kernel reads each row once and computes its
statistics in float32. Every intermediate must have no other reader.
"""

from __future__ import annotations

import numpy as np

from ait_build.ir.dims import Dim
from ait_build.ir.graph import Graph, Node
from ait_build.passes.rewrite import (Uses, add_weight, constant_fill, free_name, infer,
                                      new_value, node_names, permute_dims, position, remove_nodes,
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
    found = _row_mean(graph, uses, mean_t, add)
    if eps is None or found is None or found[1] is not None:
        return None
    return found[0], float(eps), [add] + found[2] + extra


def _row_mean(graph: Graph, uses: Uses, tensor: str, reader: Node):
    """(x, permute or None, nodes) when `tensor` is mean(x' * x', last dim, keepdim), x' = x
    or a permute of x that keeps the last axis (Swin V2 squares q before its head permute)."""
    back = _only(uses, tensor, "reshape", reader)
    pool = back and _only(uses, back.inputs[0], "global_avg_pool", back)
    rows = pool and _only(uses, pool.inputs[0], "reshape", pool)
    if rows is None:
        return None
    found = [back, pool, rows]
    perm = _only(uses, rows.inputs[0], "permute", rows)
    if perm is not None:
        rank = len(graph.tensors[perm.output].shape)
        if permute_dims(graph, perm)[-1] != rank - 1:
            return None
        found.append(perm)
    square = _only(uses, (perm or rows).inputs[0], "mul", perm or rows)
    if square is None or square.attrs.get("scalar") is not None or \
            len(square.inputs) != 2 or square.inputs[0] != square.inputs[1]:
        return None
    x = square.inputs[0]
    shape = graph.tensors[(perm or square).output].shape
    rows_shape = graph.tensors[rows.output].shape
    if not shape[-1].is_static or len(rows_shape) != 4 or rows_shape[1] != shape[-1] or \
            any(not d.is_static or d.value != 1 for d in rows_shape[2:]) or \
            tuple(graph.tensors[back.output].shape) != tuple(shape[:-1]) + (Dim.of(1),):
        return None
    return x, perm, found + [square]


def _l2_normalized(graph: Graph, uses: Uses, node: Node):
    """(x, eps, permute or None, nodes) when `node` computes x' / max(sqrt(sum(x * x)), eps)
    over the last dim, the max optional, written as a clamp (and an expand) of the root of the
    mean times C; x' = x or x permuted as the squares were."""
    if node.op != "div" or node.attrs.get("scalar") is not None or len(node.inputs) != 2:
        return None
    found, denominator, reader, eps = [], node.inputs[1], node, 0.0
    expand = _only(uses, denominator, "expand", reader)
    if expand is not None:
        found.append(expand)
        denominator, reader = expand.inputs[0], expand
    clamp = _only(uses, denominator, "clamp", reader)
    if clamp is not None:
        if clamp.attrs.get("max") is not None or clamp.attrs.get("min") is None:
            return None
        found.append(clamp)
        denominator, reader, eps = clamp.inputs[0], clamp, float(clamp.attrs["min"])
    root = _only(uses, denominator, "sqrt", reader)
    times_c = root and _only(uses, root.inputs[0], "mul", root)
    mean = times_c and times_c.attrs.get("scalar") is not None and \
        _row_mean(graph, uses, times_c.inputs[0], times_c)
    if not mean or eps < 0:
        return None
    x, perm, more = mean
    c = graph.tensors[more[-1].output].shape[-1].value
    if float(times_c.attrs["scalar"]) != float(c):
        return None
    numerator = node.inputs[0]
    if perm is not None:
        mine = uses.made_by(numerator, "permute")
        if mine is None or mine.inputs[0] != x or permute_dims(graph, mine) != \
                permute_dims(graph, perm):
            return None
        if uses.only_reader(numerator) is node:
            found.append(mine)
    elif numerator != x:
        return None
    return x, eps, perm, found + [root, times_c] + more


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


def _fuse_l2(graph: Graph, uses: Uses, node: Node, found) -> list:
    """Replaces the L2 normalization ending at `node` with rms_norm (and the permute the
    numerator had); returns the nodes that went."""
    x, eps, perm, dead = found
    c = graph.tensors[x].shape[-1].value
    name = free_name(node_names(graph) | set(graph.tensors), node.name + ".l2")
    weight = add_weight(graph, f"{name}.weight", np.full(c, c ** -0.5, np.float32), graph.dtype)
    norm = Node(name, "rms_norm", [x], [], {"eps": eps * eps / c, "affine": True},
                {"weight": weight}, node.loc)
    made = [norm]
    if perm is None:
        norm.outputs = [node.output]
    else:
        (ttype,) = infer(graph, norm)
        norm.outputs = [new_value(graph, name, ttype, node)]
        made.append(Node(node.name, "permute", list(norm.outputs), [node.output],
                         dict(perm.attrs), {}, node.loc))  # the div's name: the div goes
    at = position(graph, node)
    graph.nodes[at:at + 1] = made
    remove_nodes(graph, dead)
    return [node] + dead


def run(graph: Graph, target) -> str:
    fused = l2 = 0
    uses, removed = Uses(graph), set()  # ids of the nodes earlier matches took
    for node in [n for n in graph.nodes if n.op in ("mul", "div")]:
        found = id(node) not in removed and _l2_normalized(graph, uses, node)
        if found:
            removed |= {id(n) for n in _fuse_l2(graph, uses, node, found)}
            uses = Uses(graph)
            l2 += 1
            continue
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
    return summary((fused, "RMS norms fused"), (l2, "L2 normalizations fused"))
