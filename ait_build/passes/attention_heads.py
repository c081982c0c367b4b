"""How q, k and v reach a written-out attention, for fuse_attention: each is split into heads
(a reshape of `[..., s, h*d]` to `[..., s, h, d]`) and permuted heads first, perhaps through a
scalar factor, a norm over the head dim (Swin V2) or a slice of one packed qkv (Swin).

Attention with more than one batch axis (MaxViT's `[batch, windows, heads, s, d]`) matches the
same way, every axis before the sequence a batch axis; the attention then reads its inputs
flattened to `[batch * windows, s, h*d]` (`input_nodes`, views).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ait_build.ir.dims import Dim, numel
from ait_build.ir.graph import Graph, Node
from ait_build.passes.rewrite import Uses, add_weight, free_name, infer, new_value, permute_dims


def heads_first(rank: int) -> tuple:
    """[..., s, h, d] -> [..., h, s, d]: (0, 2, 1, 3) at rank 4."""
    lead = tuple(range(rank - 3))
    return lead + (rank - 2, rank - 3, rank - 1)


def _swap_last(rank: int) -> tuple:
    return tuple(range(rank - 2)) + (rank - 1, rank - 2)


def _head_permute(graph, uses, t, reader, rank, keys_last):
    """(permute node, order) when `t`, read only by `reader`, permutes a [..., h, d] split of
    rank `rank` to [batch..., h, s, d] (or [batch..., h, d, s] with `keys_last`): `order` the
    axes of the unsplit [..., h*d] tensor that put it as [batch..., s, h*d]. Identity for the
    usual head split; MaxViT's grid attention takes its windows from an axis after the
    sequence's, a seq-first layout ([s, b, h, d]) its batch from the second."""
    node = uses.made_by(t, "permute", "transpose")
    if node is None or uses.only_reader(t) is not reader:
        return None
    dims = permute_dims(graph, node)
    head_dim_at = -2 if keys_last else -1
    if len(dims) != rank or dims[-3] != rank - 2 or dims[head_dim_at] != rank - 1:
        return None
    seq = dims[-1] if keys_last else dims[-2]
    return node, tuple(dims[:-3]) + (seq, rank - 2)


def _permuted(graph: Graph, uses: Uses, t: str, dims: tuple, reader: Node, found: list):
    """The node making `t` when it is a permute by `dims` read only by `reader`."""
    node = uses.made_by(t, "permute", "transpose")
    if node is None or uses.only_reader(t) is not reader or permute_dims(graph, node) != dims:
        return None
    found.append(node)
    return node


def _scaled(uses, t, reader, found, factors):
    """(tensor, its reader) past a multiplication or division by a scalar making `t` that only
    `reader` reads, its factor added to `factors`; else (t, reader). PyTorch's ONNX export of
    scaled_dot_product_attention scales q and k by sqrt(scale) each, on either side of the head
    permute. `factors` None: no factor is taken."""
    node = uses.made_by(t, "mul", "div") if factors is not None else None
    scalar = node.attrs.get("scalar") if node is not None else None
    if scalar is None or uses.only_reader(t) is not reader:
        return t, reader
    found.append(node)
    factors.append(scalar if node.op == "mul" else 1.0 / scalar)
    return node.inputs[0], node


@dataclass(frozen=True)
class PackedPart:
    """q, k or v as part `index` of x [b, s, 3*h*d] seen as [b, s, 3, h, d] (`view`): Swin's
    qkv, sliced on that axis."""

    x: str
    index: int
    view: Node = field(compare=False)


@dataclass(frozen=True)
class Moved:
    """q, k or v [..., h*d], seen as `shape` (size-1 axes elsewhere: a view), whose axes `order`
    puts as [batch..., s, h*d] (a copy unless the identity)."""

    x: str
    order: tuple
    shape: tuple


def _ones_apart(shape) -> tuple:
    return tuple(d for d in shape if d != Dim.of(1))


@dataclass(frozen=True)
class Normed:
    """q or k normalized over the head dim, [..., s, h, d] (Swin V2's cosine attention): the
    attention reads it reshaped to [b, s, h*d]."""

    norm: Node


def _packed_part(graph, uses, t, rs, mine):
    """The PackedPart that `rs` ([b, s, 1, h, d] -> [b, s, h, d]) reshapes, or None."""
    sl = uses.made_by(t, "slice")
    if sl is None or uses.only_reader(t) is not rs or sl.attrs["step"] != 1:
        return None
    view = uses.made_by(sl.inputs[0], "reshape")
    start, end = Dim.of(sl.attrs["start"]), sl.attrs["end"]
    if view is None or not start.is_static or end is None or Dim.of(end) != start + 1:
        return None
    src, parts = graph.tensors[view.inputs[0]].shape, graph.tensors[view.output].shape
    if len(src) != 3 or len(parts) != 5 or tuple(src[:2]) != tuple(parts[:2]) or \
            parts[2] != Dim.of(3) or sl.attrs["axis"] % 5 != 2 or \
            src[2] != parts[2] * parts[3] * parts[4]:
        return None
    mine.append(sl)
    return PackedPart(view.inputs[0], start.value, view)


def _head_norm(graph, uses, t, reader, rank):
    """(Normed, heads, head_dim) when `t`, read only by `reader`, is a row norm (rms_norm: L2
    normalizations become one, fuse_rmsnorm.py) of a [..., s, h, d] tensor: a norm over the last
    dim is the same before the head permute as after it."""
    norm = uses.made_by(t, "rms_norm")
    if norm is None or len(norm.inputs) != 1 or uses.only_reader(t) is not reader:
        return None
    shape = graph.tensors[t].shape
    if len(shape) != rank or not (shape[-2].is_static and shape[-1].is_static):
        return None
    return Normed(norm), shape[-2].value, shape[-1].value


def _view_heads(graph, uses, t, reader, rank, keys_last, mine, factors):
    """(x, heads, head_dim) when `t`, read only by `reader`, is a reshape of x [..., s, h*d]
    straight to the heads-first [..., h, s, d] (or [..., h, d, s]), or of its [..., s, h, d]
    split (a scalar factor between them joins `factors`): what the importers write for a head
    permute that moves a size-1 axis (one head, PVT's and SegFormer's first stage; one token).
    The nodes taken go to `mine`."""
    rs = uses.made_by(t, "reshape")
    if rs is None or uses.only_reader(t) is not reader:
        return None
    ys = graph.tensors[rs.output].shape
    if len(ys) != rank:
        return None
    heads, (head_dim, seq) = ys[-3], (ys[-2:] if keys_last else ys[:-3:-1])
    one = Dim.of(1)
    if not (heads.is_static and head_dim.is_static) or \
            (seq != one and (keys_last or heads != one)):
        return None
    taken, x = [rs], rs.inputs[0]
    if tuple(graph.tensors[x].shape) == tuple(ys[:-3]) + (seq, heads, head_dim):
        x, at = _scaled(uses, x, rs, taken, factors)
        split = uses.made_by(x, "reshape")
        if split is None or uses.only_reader(x) is not at:
            return None
        taken.append(split)
        x = split.inputs[0]
    if tuple(graph.tensors[x].shape) != tuple(ys[:-3]) + (seq, heads * head_dim):
        return None
    mine += taken
    return x, heads.value, head_dim.value


def merged_view(graph, node) -> bool:
    """Whether `node` reshapes attention's [..., h, s, d] output straight to [..., s, h*d] (one
    head or one token: the head permute back would move a size-1 axis)."""
    if node.op != "reshape":
        return False
    xs, ys = graph.tensors[node.inputs[0]].shape, graph.tensors[node.output].shape
    one = Dim.of(1)
    return len(ys) == len(xs) - 1 and tuple(ys[:-2]) == tuple(xs[:-3]) and ys[-2] == xs[-2] and \
        ys[-1] == xs[-3] * xs[-1] and (xs[-3] == one or xs[-2] == one)


def split_heads(graph, uses, t, rank, reader, found, scales=None, keys_last=False):
    """(x, heads, head_dim) when t = permute(reshape(x [..., s, h*d] -> [..., s, h, d])) heads
    first (_head_permute), `x` a Moved when the batch axes or s must move first;
    (PackedPart, heads, head_dim) when the reshape takes [b, s, 1, h, d] out of a packed qkv, or
    (Normed, heads, head_dim) for a norm over the head dim before the permute; with `scales`, a
    scalar factor on either side of the permute joins it."""
    mine, factors = [], ([] if scales is not None else None)
    t, reader = _scaled(uses, t, reader, mine, factors)
    permuted = _head_permute(graph, uses, t, reader, rank, keys_last)
    if permuted is None:
        viewed = _view_heads(graph, uses, t, reader, rank, keys_last, mine, factors)
        if viewed is not None:
            found += mine
            if factors:
                scales += factors
        return viewed
    perm, order = permuted
    mine.append(perm)
    t, reader = _scaled(uses, perm.inputs[0], perm, mine, factors)
    moved = order != tuple(range(rank - 1))
    found_x = None if moved else _head_norm(graph, uses, t, reader, rank)
    rs = uses.made_by(t, "reshape") if found_x is None else None
    if rs is not None and uses.only_reader(rs.output) is reader:
        xs, ys = graph.tensors[rs.inputs[0]].shape, graph.tensors[rs.output].shape
        if len(ys) != rank or not (ys[-2].is_static and ys[-1].is_static):
            return None
        if rank == 4 and len(xs) == 5 and xs[2] == Dim.of(1) and tuple(xs[3:]) == tuple(ys[2:]):
            x = None if moved else _packed_part(graph, uses, rs.inputs[0], rs, mine)
        elif len(xs) == rank - 1 and xs[-1] == ys[-2] * ys[-1] and \
                _ones_apart(xs[:-1]) == _ones_apart(ys[:-2]):
            x = rs.inputs[0]  # the heads split off, perhaps size-1 axes moved (a view)
            if moved or tuple(xs[:-1]) != tuple(ys[:-2]):
                x = Moved(x, order, tuple(ys[:-2]) + (xs[-1],))
        else:
            x = None
        found_x = (x, ys[-2].value, ys[-1].value) if x is not None else None
        mine.append(rs)
    if found_x is None:
        return None
    found += mine  # only a full match adds nodes to replace (and scales)
    if factors:
        scales += factors
    return found_x


def keys(graph, uses, mm, found, scales):
    """split_heads of the scores matmul's K, transposed by the matmul or before it."""
    kt, rank = mm.inputs[1], len(graph.tensors[mm.inputs[1]].shape)
    if mm.attrs["transpose_b"]:
        return split_heads(graph, uses, kt, rank, mm, found, scales)
    direct = split_heads(graph, uses, kt, rank, mm, found, scales, keys_last=True)
    if direct is not None:
        return direct
    mine = []
    swap = _permuted(graph, uses, kt, _swap_last(rank), mm, mine)
    heads = split_heads(graph, uses, swap.inputs[0], rank, swap, mine, scales) if swap else None
    if heads is not None:
        found += mine
    return heads


def _flat(shape: tuple) -> tuple:
    """[..., s, c] as [batch, s, c], every axis before s one batch axis."""
    return (numel(shape[:-2]),) + tuple(shape[-2:])


def new_node(graph, names, op, inputs, attrs, like) -> Node:
    """A node `op` of `inputs`, named after `like`'s parent, its output typed and added."""
    name = free_name(names, f"{like.name.rpartition('.')[0] or like.name}.{op}")
    names.add(name)
    node = Node(name, op, inputs, [], attrs, {}, like.loc)
    (ttype,) = infer(graph, node)
    node.outputs = [new_value(graph, name, ttype, like)]
    return node


def input_nodes(graph, x, heads, head_dim, names, like) -> tuple:
    """(tensor [b, s, h*d], nodes to add) for what split_heads found: a Normed reshaped, a
    PackedPart read on its own sliced, a Moved permuted, more batch axes flattened."""
    made = []
    if isinstance(x, Normed):
        shape = graph.tensors[x.norm.output].shape
        made.append(new_node(graph, names, "reshape", [x.norm.output],
                         {"shape": _flat(shape[:-2] + (Dim.of(heads * head_dim),))}, like))
    elif isinstance(x, PackedPart):  # beside normalized q and k: the slice of its part
        width = heads * head_dim
        made.append(new_node(graph, names, "slice", [x.x],
                         {"axis": 2, "start": Dim.of(x.index * width),
                          "end": Dim.of((x.index + 1) * width), "step": 1}, like))
    else:
        if isinstance(x, Moved):
            moved, x = x, x.x
            if tuple(graph.tensors[x].shape) != moved.shape:
                made.append(new_node(graph, names, "reshape", [x], {"shape": moved.shape}, like))
                x = made[-1].output
            if moved.order != tuple(range(len(moved.order))):
                made.append(new_node(graph, names, "permute", [x], {"dims": moved.order}, like))
                x = made[-1].output
        if len(graph.tensors[x].shape) > 3:
            made.append(new_node(graph, names, "reshape", [x],
                             {"shape": _flat(graph.tensors[x].shape)}, like))
    return (made[-1].output if made else x), made


def inputs(graph, q, k, v, found, names, like) -> tuple | None:
    """(attention inputs, packed, nodes to add) of the three; parts of one packed qkv are one
    input."""
    xs = [q[0], k[0], v[0]]
    parts = [x for x in xs if isinstance(x, PackedPart)]
    if parts and len(parts) == 3:
        if len({x.x for x in parts}) != 1 or [x.index for x in parts] != [0, 1, 2]:
            return None
        found.append(parts[0].view)
        return [parts[0].x], True, []
    made, flat = [], []
    for x in xs:
        x, nodes = input_nodes(graph, x, q[1], q[2], names, like)
        made += nodes
        flat.append(x)
    return flat, False, made


def flat_bias(graph, bias, names, like) -> tuple | None:
    """(bias, nodes to add) for scores with more batch axes than one: a bias broadcast over all
    of them ([1, 1, h, q, k], MaxViT's relative positions) as [1, h, q, k]; else None."""
    shape = graph.tensors[bias].shape
    if len(shape) > 3 and any(d != Dim.of(1) for d in shape[:-3]):
        return None  # varies along a batch axis
    if len(shape) <= 4:
        return bias, []
    node = new_node(graph, names, "reshape", [bias], {"shape": (Dim.of(1),) + tuple(shape[-3:])},
                like)
    return node.output, [node]


def scaled_query(graph, q, factors, head_dim, names, like) -> tuple:
    """(q [b, s, h*d] times a factor per head, [parameter, mul] nodes)."""
    value = np.repeat(np.asarray(factors, np.float32), head_dim)
    base = f"{like.name.rpartition('.')[0] or like.name}.head_scale"
    name = free_name(names, base)
    names.add(name)
    weight = add_weight(graph, f"{name}.folded_weight", value, graph.dtype)
    param = Node(name, "parameter", [], [], {"shape": (Dim.of(value.size),), "init": "normal"},
                 {"value": weight}, like.loc)
    mul = Node(free_name(names, base + ".mul"), "mul", [q, None], [], {}, {}, like.loc)
    names.add(mul.name)
    for node in (param, mul):
        node.inputs = [param.output if t is None else t for t in node.inputs]
        (ttype,) = infer(graph, node)
        node.outputs = [new_value(graph, node.name, ttype, like)]
    return mul.output, [param, mul]
