"""Source layers written as several of our ops, so every backend runs them on kernels it has:

- conv1d (wav2vec2, Whisper's encoder): a conv2d over a height of 1; the weight keeps its
  state_dict name, with a size-1 axis added. Over a length of symbolic size (conv2d needs a
  static width): pointwise ones as GEMMs over the positions (SqueezeBERT), depthwise ones as
  each tap's shifted slice times its per-channel weight, summed (ConvBERT), any other as unfold
  and a GEMM; the weights keep their names and shapes.
- unfold (F.unfold, ConvBERT's conv-kernel attention): pad, then one shifted slice per tap,
  stacked next to their channel in PyTorch's order.
- conv3d (video: R3D): one conv2d per temporal tap over the frames that tap reads (a strided
  slice, frames folded into the batch), summed; `<weight>.t<i>` holds tap i's [O, I, kh, kw].
- transposed convolutions, 1-, 2- and 3-d (decoders, U-Nets, GANs, vocoders): the input with
  stride - 1 zeros between elements, padded by dilation * (k - 1) - padding (plus
  output_padding after), through the stride-1 convolution of that rank above with the weight
  flipped and its in/out axes swapped (`<weight>.flipped`). It spends the product of the
  strides times the multiply-adds of a direct kernel on the zeros; the GEMM-backed conv2d
  still runs it at its own speed.
- group_norm (wav2vec2's feature extractor, diffusion U-Nets): a layer_norm without affine over
  [N, groups, C / groups * spatial], then the per-channel scale and shift.
"""

from __future__ import annotations

import numpy as np

from ait_build.importers.graph import NHWC, Value, shape_attr
from ait_build.ir.dims import Dim


def _tuple(value, n: int) -> tuple:
    if isinstance(value, (list, tuple)):
        value = [int(v) for v in value]
        return tuple(value * n if len(value) == 1 else value)
    return (int(value),) * n


def convolution(lower, x: Value, weight: str, bias: str | None, stride, padding, dilation,
                groups: int, name: str | None, transposed: bool = False,
                output_padding=0) -> Value:
    """A source convolution of the input's rank ([N, C, L]: 1-d, ... [N, C, T, H, W]: 3-d)."""
    rank = x.rank - 2
    stride, padding, dilation = (_tuple(v, rank) for v in (stride, padding, dilation))
    if transposed:
        return conv_transpose(lower, x, weight, bias, stride, padding, dilation, groups,
                              _tuple(output_padding, rank), name)
    if rank not in (1, 2, 3):
        lower.fail(f"a {rank}-d convolution (1-, 2- and 3-d)")
    if rank == 1:
        return conv1d(lower, x, weight, bias, stride, padding, dilation, groups, name)
    if rank == 3:
        return conv3d(lower, x, weight, bias, stride, padding, dilation, groups, name)
    return lower.conv2d(x, weight, bias, stride, padding, dilation, groups, name)


def _reshaped_weight(g, name: str, array: np.ndarray) -> str:
    """`array`, weight `name` with size-1 axes added or dropped, under `name` itself when
    nothing reads that weight yet, else under a fresh name next to it (bench --vs torch loads
    such a weight back into the module: bench/models.py)."""
    used = name in g.values or any(name in n.weights.values() for n in g.nodes)
    if not used:
        g.weights[name] = np.ascontiguousarray(array)
        return name
    return g.add_weight(name, np.ascontiguousarray(array))


def conv1d(lower, x, weight, bias, stride, padding, dilation, groups, name) -> Value:
    w = lower.g.weights[weight]
    n, c, length = x.source_shape
    if not length.is_static:
        reach = length + 2 * padding[0] - dilation[0] * (w.shape[-1] - 1) - 1
        if reach.floor_div(stride[0]) is None:  # the output length is not a polynomial
            lower.fail(f"a strided 1-d convolution over a length of symbolic size that its "
                       f"stride does not divide: ({reach}) // {stride[0]} + 1 outputs; declare "
                       "the length so that it does (wav2vec2's encoder: --input "
                       "input_values:batch,320*frames+80)")
        if w.shape[-1] == 1 and padding[0] == 0 and stride[0] == 1:
            return _pointwise_conv1d(lower, x, weight, bias, groups)
        if groups == c.value == w.shape[0]:
            return _depthwise_conv1d(lower, x, weight, bias, padding[0], dilation[0], stride[0])
        # the window's taps as channels (c*K + k), then the pointwise GEMM over them
        cols = unfold(lower, lower.reshape(x, (n, c, length, Dim.of(1))), (w.shape[-1], 1),
                      (dilation[0], 1), (padding[0], 0), (stride[0], 1))
        return _pointwise_conv1d(lower, cols, weight, bias, groups)
    image = lower.reshape(x, (n, c, Dim.of(1), length))
    w2 = weight if w.ndim == 4 else \
        _reshaped_weight(lower.g, weight, w[:, :, None, :])  # 4-d: one conv1d shares another's
    out = lower.conv2d(image, w2, bias, (1, stride[0]), (0, padding[0]), (1, dilation[0]),
                       groups, name)
    bn, o, _, lo = out.source_shape
    return lower.reshape(out, (bn, o, lo))


def _pointwise_conv1d(lower, x, weight, bias, groups: int) -> Value:
    """A conv1d of kernel 1 over a sequence of symbolic length (SqueezeBERT's), [N, C, L] ->
    [N, O, L], as GEMMs over the positions: a linear over the channels, or per group [L, C/g]
    times its weights' [O/g, C/g] transposed, batched over the images and groups (the weight
    keeps its name and elements, viewed as [g, O/g, C/g]). A wider window's x is its unfold
    [N, C*K, L] and the weight [O, C/g, K] is viewed as [g, O/g, C/g*K]: the same order."""
    w = lower.g.weights[weight]
    n, c, length = x.source_shape
    o, cg = w.shape[0], c.value // groups
    if groups == 1 and w.shape[-1] == 1:  # a linear over the channels, its bias in the epilogue
        dense = _reshaped_weight(lower.g, weight, w.reshape(o, cg))
        return lower.transpose(lower.linear(lower.transpose(x, 1, 2), dense, bias, None), 1, 2)
    param = lambda name: lower.g.parameter(name, lower.path, lower.where)
    grouped = lower.reshape(param(weight), (groups, o // groups, cg))
    rows = lower.transpose(lower.reshape(x, (n, groups, cg, length)), 2, 3)  # [N, g, L, C/g]
    y = lower.matmul(rows, lower.transpose(grouped, 1, 2))  # [N, g, L, O/g]
    if bias is not None:
        y = lower.binary("add", y, lower.reshape(param(bias), (groups, 1, o // groups)))
    return lower.reshape(lower.transpose(y, 2, 3), (n, Dim.of(o), length))


def _depthwise_conv1d(lower, x, weight, bias, padding: int, dilation: int, stride: int) -> Value:
    """A depthwise conv1d over a symbolic length (ConvBERT's SeparableConv1D), [N, C, L] ->
    [N, C, L']: conv2d needs a static width, so each tap's shifted slice times its per-channel
    weight, summed (elementwise ops the optimizer fuses). The weight keeps its name and shape
    [C, 1, K]; each tap reads its column."""
    c, k = x.source_shape[1], lower.g.weights[weight].shape[-1]
    param = lambda name: lower.g.parameter(name, lower.path, lower.where)
    w, total = param(weight), None
    for i, tap in enumerate(_taps(lower, x, 2, k, dilation, padding, stride)):
        column = lower.reshape(lower.slice(w, 2, i, i + 1), (c, Dim.of(1)))
        term = lower.binary("mul", tap, column)
        total = term if total is None else lower.binary("add", total, term)
    if bias is not None:
        total = lower.binary("add", total, lower.reshape(param(bias), (c, Dim.of(1))))
    return total


def _taps(lower, x: Value, axis: int, k: int, dilation: int, padding: int, stride: int) -> list:
    """The k views of x a window slides over along source `axis`, one per tap: x padded both
    sides, tap i its slice from i * dilation over the output's length (a symbolic length:
    static offsets from the end, so the slices keep its dim; a stride must divide the dim terms
    of the length the window reaches over, `320*frames + 69` by 5, so that the output length
    stays a polynomial and each tap ends a static distance r from the padded end)."""
    size = x.source_shape[axis]
    span = dilation * (k - 1)
    x = lower.pad(x, [(padding, padding) if a == axis else (0, 0) for a in range(x.rank)])
    if not size.is_static:
        reach = size + 2 * padding - span - 1
        steps = reach.floor_div(stride)
        if steps is None:
            lower.fail(f"a window of stride {stride} over a symbolic size ({size}) that the "
                       f"stride does not divide: ({reach}) // {stride} + 1 windows")
        r = (reach - steps * stride).value
        return [lower.slice(x, axis, i * dilation, i * dilation - span - r or None, stride)
                for i in range(k)]
    count = (size.value + 2 * padding - span - 1) // stride + 1
    return [lower.slice(x, axis, i * dilation, i * dilation + (count - 1) * stride + 1, stride)
            for i in range(k)]


def unfold(lower, x, kernel, dilation, padding, stride) -> Value:
    """F.unfold / nn.Unfold (ConvBERT's conv-kernel attention, aten.im2col): [N, C, H, W] ->
    [N, C*kh*kw, Ho*Wo], each window's taps as channels in PyTorch's order (c*kh*kw + i*kw + j):
    the taps' shifted slices (_taps) stacked next to their channel, so symbolic sizes work."""
    n, c = x.source_shape[:2]
    rows = _taps(lower, x, 2, kernel[0], dilation[0], padding[0], stride[0])
    taps = [t for r in rows for t in _taps(lower, r, 3, kernel[1], dilation[1], padding[1],
                                            stride[1])]
    _, _, ho, wo = taps[0].source_shape
    flat = [lower.reshape(t, (n, c, Dim.of(1), ho * wo)) for t in taps]
    stacked = lower.concat(flat, 2) if len(flat) > 1 else flat[0]  # [N, C, taps, Ho*Wo]
    return lower.reshape(stacked, (n, c * len(taps), ho * wo))


def conv3d(lower, x, weight, bias, stride, padding, dilation, groups, name) -> Value:
    """Frames [N, C, T, H, W] -> [N, O, To, Ho, Wo]: tap i of the kernel's time axis reads
    frames i*dt, i*dt + st, ... of the time-padded input."""
    w = lower.g.weights[weight]
    n, c, t, h, wd = x.source_shape
    if not t.is_static:
        lower.fail("a 3-d convolution over a time axis of symbolic size")
    (st, sh, sw), (pt, ph, pw), (dt, dh, dw) = stride, padding, dilation
    kt = w.shape[2]
    frames = (t.value + 2 * pt - dt * (kt - 1) - 1) // st + 1
    channels_last = (0, 2, 3, 4, 1)
    x = lower.pad(lower.layout(x, channels_last), [(0, 0), (0, 0), (pt, pt), (0, 0), (0, 0)])
    total = None
    for i in range(kt):
        taps = lower.slice(x, 2, i * dt, i * dt + (frames - 1) * st + 1, st)
        ours = taps.shape  # [N, To, H, W, C]
        batch = ours[0] * ours[1]
        images = lower.emit("reshape", [taps], {"shape": shape_attr(
            (batch,) + tuple(ours[2:]), ours)}, hint="frames", perm=NHWC)
        tap = lower.g.add_weight(f"{weight}.t{i}", np.ascontiguousarray(w[:, :, i]))
        out = lower.conv2d(images, tap, bias if i == 0 else None, (sh, sw), (ph, pw),
                           (dh, dw), groups, f"{name}.t{i}" if name else None)
        total = out if total is None else lower.binary("add", total, out)
    _, ho, wo, o = total.shape
    return lower.emit("reshape", [total], {"shape": shape_attr((n, Dim.of(frames), ho, wo, o),
                                                               total.shape)},
                      hint="video", perm=channels_last)


LOWEST = {"float32": -3.4028234663852886e38, "float16": -65504.0, "bfloat16": -3.3895e38}


def pool3d(lower, x, op, kernel, stride, padding, count_include_pad=True) -> Value:
    """max_pool3d / avg_pool3d (S3D) over frames [N, C, T, H, W]: the 2-d pool of each frame
    (frames folded into the batch), then the time window's taps, the frames a stride apart
    in the time-padded result, combined: their max, or their mean (a padded frame counts as
    zeros, as count_include_pad does)."""
    n, c, t, h, wd = x.source_shape
    if not t.is_static:
        lower.fail("a 3-d pool over a time axis of symbolic size")
    (kt, kh, kw), (st, sh, sw), (pt, ph, pw) = kernel, stride, padding
    if op == "avg_pool2d" and pt and not count_include_pad:
        lower.fail("avg_pool3d padding its time axis without counting the padding")
    channels_last = (0, 2, 3, 4, 1)
    x = lower.layout(x, channels_last)
    ours = x.shape  # [N, T, H, W, C]
    images = lower.emit("reshape", [x], {"shape": shape_attr(
        (ours[0] * ours[1],) + tuple(ours[2:]), ours)}, hint="frames", perm=NHWC)
    pooled = lower.pool(op, images, (kh, kw), (sh, sw), (ph, pw),
                        count_include_pad=count_include_pad)
    _, ho, wo, _ = pooled.shape
    video = lower.emit("reshape", [pooled], {"shape": shape_attr((n, t, ho, wo, c),
                                                                 pooled.shape)},
                       hint="video", perm=channels_last)
    frames = (t.value + 2 * pt - kt) // st + 1
    fill = LOWEST[lower.g.dtype] if op == "max_pool2d" else 0.0
    video = lower.pad(video, [(0, 0), (0, 0), (pt, pt), (0, 0), (0, 0)], fill)
    total = None
    for i in range(kt):
        tap = lower.slice(video, 2, i, i + (frames - 1) * st + 1, st)
        total = tap if total is None else \
            lower.binary("maximum" if op == "max_pool2d" else "add", total, tap)
    return total if op == "max_pool2d" or kt == 1 else lower.binary("mul", total, 1.0 / kt)


def conv_transpose(lower, x, weight, bias, stride, padding, dilation, groups, output_padding,
                   name) -> Value:
    """A transposed convolution of any rank: the input with stride - 1 zeros between elements
    along each spatial axis, padded (or cropped) to what the kernel reaches, through the
    ordinary stride-1 convolution of that rank."""
    w = lower.g.weights[weight]  # [in, out / groups, *kernel]
    rank = w.ndim - 2
    cin, cout_g, kernel = w.shape[0], w.shape[1], w.shape[2:]
    spatial = tuple(range(3, 3 + rank))
    # the equivalent conv's weight [out, in / groups, *kernel], flipped in space
    flipped = w.reshape((groups, cin // groups, cout_g) + kernel).transpose((0, 2, 1) + spatial)
    flipped = flipped[(slice(None),) * 3 + (slice(None, None, -1),) * rank]
    conv_weight = lower.g.add_weight(f"{weight}.flipped", np.ascontiguousarray(
        flipped.reshape((groups * cout_g, cin // groups) + kernel)))
    n, c, *sizes = x.source_shape
    if not all(d.is_static for d in sizes):
        lower.fail("a transposed convolution of a symbolic size")
    channels_last = (0,) + tuple(range(2, 2 + rank)) + (1,)
    x = lower.layout(x, channels_last)
    if any(s != 1 for s in stride):  # zeros between elements: [N, d1, 1, d2, 1, ..., C] padded
        cells = sum(((d, Dim.of(1)) for d in sizes), ())
        cell = lower.emit("reshape", [x], {"shape": shape_attr((n,) + cells + (c,), x.shape)},
                          hint="pixels")
        pads = [0, 0] + sum(([0, 0, 0, s - 1] for s in stride), []) + [0, 0]
        spread = lower.emit("pad", [cell], {"pads": pads}, hint="stuff")
        stuffed = tuple(d * s for d, s in zip(sizes, stride))
        x = lower.emit("reshape", [spread], {"shape": shape_attr((n,) + stuffed + (c,),
                                                                 spread.shape)},
                       hint="stuffed", perm=channels_last)
    for i in range(rank):
        size, s, k, p, d = sizes[i].value, stride[i], kernel[i], padding[i], dilation[i]
        before = d * (k - 1) - p
        total_after = before + output_padding[i]
        after = total_after - (s - 1)  # the stuffing left s - 1 zeros after the last element
        if before < 0:  # more padding than the kernel reaches: crop instead
            x = lower.slice(x, 2 + i, -before, None)
        if after < 0:
            x = lower.slice(x, 2 + i, 0, (size - 1) * s + 1 + min(before, 0) + total_after)
        pads = [(0, 0)] * (rank + 2)
        pads[2 + i] = (max(before, 0), max(after, 0))
        x = lower.pad(x, pads)
    return convolution(lower, x, conv_weight, bias, 1, 0, dilation, groups, name)


def group_norm(lower, x: Value, groups: int, weight: Value | None, bias: Value | None,
               eps: float) -> Value:
    shape = x.source_shape
    n, c = shape[0], shape[1]
    if not c.is_static or c.value % groups:
        lower.fail(f"group_norm of {c} channels in {groups} groups")
    rest = Dim.of(c.value // groups)
    for d in shape[2:]:
        rest = rest * d
    rows = lower.reshape(x, (n, Dim.of(groups), rest))
    if rest.is_static:
        attrs = {"affine": False} if eps == 1e-5 else {"affine": False, "eps": float(eps)}
        out = lower.reshape(lower.last_axis("layer_norm", rows, attrs), tuple(shape))
    else:  # layer_norm needs a static row: the moments as means over the positions
        out = lower.reshape(lower.transpose(_normalized(lower, lower.transpose(rows, 1, 2), eps),
                                            1, 2), tuple(shape))
    per_channel = (c,) + (Dim.of(1),) * (len(shape) - 2)
    if weight is not None:
        out = lower.binary("mul", out, lower.reshape(weight, per_channel))
    if bias is not None:
        out = lower.binary("add", out, lower.reshape(bias, per_channel))
    return out


def _normalized(lower, x: Value, eps: float) -> Value:
    """(x - mean) / sqrt(var + eps) over axis 1 of [N, R, G] with R symbolic (wav2vec2's group
    norm of each channel over the frames): global_avg_pool's means, the channels inner."""
    centered = lower.binary("sub", x, lower.mean(x, [1], True))
    var = lower.mean(lower.binary("mul", centered, centered), [1], True)
    return lower.binary("div", centered, lower.unary("sqrt", lower.binary("add", var, eps)))
