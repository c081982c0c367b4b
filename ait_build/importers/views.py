"""Chains of data-movement nodes (reshape, permute, slice) read as one index map.

A source model moves data in its own terms; what reaches our graph is whatever reshapes,
permutes and slices its tensors went through. Run on `np.arange` (symbolic dims bound to
small primes), a chain tells which elements of its start it selects and in what order, so
rewrites can ask what the chain does, not how it was written. torch's nn.MultiheadAttention
is the model case: q, k and v are split from the packed in_proj output through
unflatten/transpose/select/view/transpose/view, and the heads are merged seq-first before
out_proj; as index maps they are three slices of the last axis and a row permutation that
the permute after out_proj undoes.

- `unpermute_linears`: permute rows -> linear -> the inverse row permutation becomes the
  linear on the unpermuted rows (a linear maps each row on its own);
- `pack_attention`: multi_head_attention whose q, k and v are the three thirds of the last
  axis of one tensor reads that tensor (`packed: true`), with no copies.
"""

from __future__ import annotations

import numpy as np

from ait_build.importers.graph import ImportGraph, shape_attr

MOVES = ("reshape", "permute", "slice")
PRIMES = (5, 7, 11, 13, 17, 19, 23)


def _concrete(g: ImportGraph, shape: tuple) -> tuple:
    names = sorted({s for d in shape for s in d.symbols} | set(g.dims))
    bind = {n: PRIMES[i % len(PRIMES)] for i, n in enumerate(names)}
    return tuple(d.eval(bind) for d in shape)


def _shape(g: ImportGraph, ref: str) -> tuple:
    return tuple(g.values[ref].shape)


def _apply(g: ImportGraph, node, x: np.ndarray) -> np.ndarray:
    if node.op == "reshape":
        return x.reshape(_concrete(g, _shape(g, node.outputs[0])))
    if node.op == "permute":
        return x.transpose(node.attrs["dims"])
    a = node.attrs
    axis = a.get("axis", 0) % x.ndim
    index = [slice(None)] * x.ndim
    end = a.get("end")
    if end is not None and not isinstance(end, int):
        return None
    index[axis] = slice(a.get("start", 0), end, a.get("step", 1))
    return x[tuple(index)]


def _index_map(g: ImportGraph, start: str, chain: list):
    x = np.arange(int(np.prod(_concrete(g, _shape(g, start)), dtype=np.int64))).reshape(
        _concrete(g, _shape(g, start)))
    for node in chain:
        x = _apply(g, node, x)
        if x is None:
            return None
    return x


def _back(g: ImportGraph, ref: str, producers: dict) -> list:
    """[(start, chain)], nearest first: each start a tensor that `ref` is made from by the
    movement nodes of its chain (which others may read too: the map only reads them)."""
    out, chain = [], []
    while True:
        node = producers.get(ref)
        if node is None or node.op not in MOVES or len(node.outputs) != 1:
            return out
        chain = [node] + chain
        ref = node.inputs[0]
        out.append((ref, chain))


def _forward(g: ImportGraph, ref: str, readers: dict) -> list:
    chain = []
    while ref not in g.outputs and len(readers.get(ref, [])) == 1:
        node = readers[ref][0]
        if node.op not in MOVES:
            break
        chain.append(node)
        ref = node.outputs[0]
    return chain


def _rows(index: np.ndarray, width: int):
    """Which whole rows of `width` elements the map reads, in order, or None."""
    flat = index.reshape(-1, width)
    first = flat[:, :1]
    if (first % width).any() or not (flat == first + np.arange(width)).all():
        return None
    return first[:, 0] // width


def _readers(g: ImportGraph) -> dict:
    out: dict = {}
    for node in g.nodes:
        for ref in node.inputs:
            out.setdefault(ref, []).append(node)
    return out


def _replace(g: ImportGraph, old: str, new: str) -> None:
    for node in g.nodes:
        node.inputs = [new if r == old else r for r in node.inputs]
    g.outputs = [new if r == old else r for r in g.outputs]


def unpermute_linears(g: ImportGraph) -> int:
    changed = 0
    for node in list(g.nodes):
        if node.op != "linear" or len(node.inputs) != 1:
            continue
        producers = {r: n for n in g.nodes for r in n.outputs}
        k, n = _shape(g, node.inputs[0])[-1], _shape(g, node.outputs[0])[-1]
        after = _forward(g, node.outputs[0], _readers(g))
        if not after or not _shape(g, after[-1].outputs[0])[-1] == n:
            continue
        out = _index_map(g, node.outputs[0], after)
        tau = None if out is None else _rows(out, _concrete(g, (n,))[0])
        if tau is None:
            continue
        start = None
        for ref, before in reversed(_back(g, node.inputs[0], producers)):  # furthest first
            into = _index_map(g, ref, before) if _shape(g, ref)[-1] == k else None
            sigma = None if into is None else _rows(into, _concrete(g, (k,))[0])
            if sigma is not None and len(sigma) == len(tau) and \
                    (sigma[tau] == np.arange(len(tau))).all():
                start = ref
                break
        if start is None:
            continue
        # row r of the end is row sigma[tau[r]] = r of `start`: the linear reads `start`
        end = after[-1].outputs[0]
        node.inputs = [start]
        g.values[node.outputs[0]].shape = _shape(g, start)[:-1] + (n,)
        final = _shape(g, end)
        if _shape(g, node.outputs[0]) == final:
            _replace(g, end, node.outputs[0])
        else:
            last = after[-1]
            last.op, last.inputs = "reshape", [node.outputs[0]]
            last.attrs = {"shape": shape_attr(final, _shape(g, node.outputs[0]))}
            after = after[:-1]
        g.nodes = [m for m in g.nodes if not any(m is a for a in after)]
        changed += 1
    return changed


def pack_attention(g: ImportGraph) -> int:
    changed = 0
    for node in g.nodes:
        if node.op != "multi_head_attention" or node.attrs.get("packed") or len(node.inputs) < 3:
            continue
        producers = {r: n for n in g.nodes for r in n.outputs}
        ours = _shape(g, node.inputs[0])

        def packed(start):  # [..., 3 * width] with q's leading dims
            shape = _shape(g, start)
            return shape[:-1] == ours[:-1] and shape[-1] == ours[-1] * 3

        found = [next(((s, c) for s, c in _back(g, ref, producers) if packed(s)), (None, None))
                 for ref in node.inputs[:3]]
        start = found[0][0]
        if start is None or any(s != start for s, _ in found):
            continue
        whole = _index_map(g, start, [])
        third = _concrete(g, (ours[-1],))[0]
        maps = [_index_map(g, start, chain) for _, chain in found]
        if any(m is None or m.shape != whole[..., :third].shape or
               not (m == whole[..., i * third:(i + 1) * third]).all()
               for i, m in enumerate(maps)):
            continue
        node.inputs = [start] + node.inputs[3:]
        node.attrs["packed"] = True
        changed += 1
    return changed
