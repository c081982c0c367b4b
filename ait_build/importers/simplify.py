"""Clean-ups of an imported graph before it is written: what a person would not write.

- reshape of a reshape reads the first one's input; a reshape to the same shape goes;
- a linear between a flattening reshape and its inverse (transformers' Conv1D: view(-1, in),
  addmm, view back) reads the unflattened tensor, or a reshape of it to the rows the one back
  makes (nn.MultiheadAttention's out_proj), so the residual add after it reads the linear;
- chains of reshapes, permutes and slices are read as index maps (views.py): a linear between
  a row permutation and its inverse reads the unpermuted rows, attention over the three
  thirds of one tensor reads it packed;
- nodes nobody reads go, and with them weights nobody uses.

Shapes come from the op registry (the graph's `values`), so rewrites never guess sizes.
"""

from __future__ import annotations

from ait_build.importers.graph import ImportGraph, shape_attr
from ait_build.importers.views import pack_attention, unpermute_linears
from ait_build.ir.dims import Dim


def _replace(g: ImportGraph, old: str, new: str) -> None:
    for node in g.nodes:
        node.inputs = [new if r == old else r for r in node.inputs]
    g.outputs = [new if r == old else r for r in g.outputs]


def _producers(g: ImportGraph) -> dict:
    return {ref: node for node in g.nodes for ref in node.outputs}


def _shape(g: ImportGraph, ref: str) -> tuple:
    return tuple(g.values[ref].shape)


def merge_reshapes(g: ImportGraph) -> int:
    changed = 0
    for node in g.nodes:
        if node.op != "reshape":
            continue
        src = node.inputs[0]
        made = _producers(g).get(src)
        out_shape = _shape(g, node.outputs[0])
        if made is not None and made.op == "reshape":
            node.inputs = [made.inputs[0]]
            src = node.inputs[0]
            changed += 1
        node.attrs["shape"] = shape_attr(out_shape, _shape(g, src))
    return changed


def drop_no_ops(g: ImportGraph) -> int:
    """Reshapes to the input's own shape and identities that name no output."""
    dropped = 0
    keep = []
    for node in g.nodes:
        out = node.outputs[0] if len(node.outputs) == 1 else None
        same = out is not None and node.op in ("reshape", "identity") and \
            _shape(g, node.inputs[0]) == _shape(g, out)
        if same and out not in g.outputs:
            _replace(g, out, node.inputs[0])
            dropped += 1
            continue
        keep.append(node)
    g.nodes = keep
    return dropped


def unflatten_linears(g: ImportGraph) -> int:
    """reshape([..., k] -> [m, k]) -> linear -> reshape([m, n] -> [..., n]) becomes one linear."""
    uses = g.uses()
    producers = _producers(g)
    changed = 0
    for node in list(g.nodes):
        if node.op != "linear" or len(node.inputs) != 1:
            continue
        flat = producers.get(node.inputs[0])
        if flat is None or flat.op != "reshape" or uses.get(flat.outputs[0]) != 1:
            continue
        readers = [n for n in g.nodes if node.outputs[0] in n.inputs]
        if len(readers) != 1 or readers[0].op != "reshape" or node.outputs[0] in g.outputs:
            continue
        back = readers[0]
        src = _shape(g, flat.inputs[0])
        out = _shape(g, back.outputs[0])
        k = _shape(g, flat.outputs[0])[-1]
        if src[:-1] == out[:-1] and src[-1] == k:
            node.inputs = [flat.inputs[0]]
        elif _numel(src) == _numel(out[:-1]) * k:
            # the flattening reshape splits the rows as the one back does (attention's
            # [s, b, h, d] -> [s*b, h*d] before out_proj): it reshapes to [..., k] instead
            g.values[flat.outputs[0]].shape = out[:-1] + (k,)
            flat.attrs["shape"] = shape_attr(out[:-1] + (k,), src)
        else:
            continue
        g.values[node.outputs[0]].shape = out
        _replace(g, back.outputs[0], node.outputs[0])
        g.nodes = [n for n in g.nodes if n is not back]
        changed += 1
    return changed


def _numel(shape: tuple):
    out = Dim.of(1)
    for d in shape:
        out = out * d
    return out


def drop_dead(g: ImportGraph) -> int:
    dropped = 0
    while True:
        uses = g.uses()
        keep = [n for n in g.nodes if any(uses.get(r) for r in n.outputs)]
        if len(keep) == len(g.nodes):
            break
        dropped += len(g.nodes) - len(keep)
        g.nodes = keep
    used = {w for n in g.nodes for w in n.weights.values()}
    used |= {n.name for n in g.nodes if n.op == "parameter"}
    g.weights = {k: v for k, v in g.weights.items() if k in used}
    return dropped


def simplify(g: ImportGraph) -> None:
    while (unflatten_linears(g) + unpermute_linears(g) + pack_attention(g) + merge_reshapes(g)
           + drop_no_ops(g) + drop_dead(g)):
        pass
