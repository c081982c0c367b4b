"""ATen rearrangements written as our reshapes, permutes and gathers of known positions: pixel
(un)shuffle, channel shuffle, rot90 and Tensor.unfold. The table joins torch_ops.HANDLERS."""

from __future__ import annotations

from ait_build.errors import AitError
from ait_build.importers.graph import registrar
from ait_build.importers.torch_args import arg
from ait_build.importers.torch_args import key as _key
from ait_build.ir.dims import Dim

HANDLERS: dict = {}
handles = registrar(HANDLERS)


def _static(size: Dim, what: str) -> int:
    if not size.is_static:
        raise AitError(f"{what} of an axis of symbolic size {size}")
    return size.value


@handles("aten.pixel_shuffle.default", "aten.pixel_unshuffle.default")
def _pixel_shuffle(t, node):
    """[*, C r^2, H, W] <-> [*, C, H r, W r]: channel c r^2 + i r + j goes to pixel
    (h r + i, w r + j)."""
    x, r = t.tensor(node.args[0]), int(node.args[1])
    *lead, c, h, w = x.source_shape
    lead, k = tuple(lead), len(lead)
    one = Dim.of(r)
    if _key(node) == "aten.pixel_shuffle.default":
        channels = Dim.of(_static(c, "pixel_shuffle") // (r * r))
        x = t.lower.reshape(x, lead + (channels, one, one, h, w))
        x = t.lower.permute(x, list(range(k)) + [k, k + 3, k + 1, k + 4, k + 2])
        return t.lower.reshape(x, lead + (channels, h * r, w * r))
    rows = Dim.of(_static(h, "pixel_unshuffle") // r)
    cols = Dim.of(_static(w, "pixel_unshuffle") // r)
    x = t.lower.reshape(x, lead + (c, rows, one, cols, one))
    x = t.lower.permute(x, list(range(k)) + [k, k + 2, k + 4, k + 1, k + 3])
    return t.lower.reshape(x, lead + (c * (r * r), rows, cols))


@handles("aten.channel_shuffle.default", "aten.native_channel_shuffle.default")
def _channel_shuffle(t, node):
    """[N, g * n, ...] -> [N, n * g, ...]: the channels viewed as g x n, transposed."""
    x, groups = t.tensor(node.args[0]), int(node.args[1])
    n, c, *rest = x.source_shape
    per = Dim.of(_static(c, "channel_shuffle") // groups)
    x = t.lower.reshape(x, (n, Dim.of(groups), per) + tuple(rest))
    return t.lower.reshape(t.lower.transpose(x, 1, 2), (n, c) + tuple(rest))


def _flip(t, x, axis: int):
    size = _static(x.source_shape[axis % x.rank], "rot90")
    return t.lower.take(x, axis, list(reversed(range(size))))


@handles("aten.rot90.default")
def _rot90(t, node):
    """k quarter turns from dims[0] toward dims[1]: flips and a transpose."""
    x = t.tensor(node.args[0])
    k = int(arg(node, 1, "k", 1)) % 4
    a, b = (d % x.rank for d in arg(node, 2, "dims", [0, 1]))
    if k == 0:
        return x
    if k == 2:
        return _flip(t, _flip(t, x, a), b)
    return t.lower.transpose(_flip(t, x, b if k == 1 else a), a, b)


@handles("aten.unfold.default")
def _unfold(t, node):
    """Tensor.unfold(dim, size, step): the windows along dim, each window's elements in a new
    last axis; one gather of every window's positions, then a reshape and a permute."""
    x, axis, size, step = t.tensor(node.args[0]), node.args[1] % t.tensor(node.args[0]).rank, \
        int(node.args[2]), int(node.args[3])
    length = _static(x.source_shape[axis], "unfold")
    count = (length - size) // step + 1
    if count < 1:
        raise AitError(f"unfold windows of {size} over an axis of {length}")
    taken = t.lower.take(x, axis, [w * step + j for w in range(count) for j in range(size)])
    shape = list(x.source_shape)
    shape[axis:axis + 1] = [Dim.of(count), Dim.of(size)]
    windows = t.lower.reshape(taken, tuple(shape))
    order = [i for i in range(len(shape)) if i != axis + 1] + [axis + 1]
    return t.lower.permute(windows, order)
