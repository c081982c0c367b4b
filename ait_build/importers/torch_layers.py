"""ATen layers -> our ops: convolutions of every rank and unfold (composites.py), LSTM/GRU
(recurrent.py), normalizations, pools, resizes and reductions. One small handler per op, as in
torch_ops.py, whose table joins this one's.
"""

from __future__ import annotations

from ait_build.errors import AitError
from ait_build.importers.composites import convolution, group_norm, pool3d, unfold
from ait_build.importers.graph import registrar
from ait_build.importers.recurrent import Cell, run_layers
from ait_build.importers.sampling import grid_sample
from ait_build.importers.torch_args import arg
from ait_build.importers.torch_args import key as _key
from ait_build.ir.dims import Dim

HANDLERS: dict = {}
handles = registrar(HANDLERS)


# -- convolutions, recurrent layers -------------------------------------------------------------

@handles("aten.conv2d.default", "aten.conv2d.padding", "aten.convolution.default",
         "aten.conv1d.default", "aten.conv1d.padding", "aten.conv3d.default",
         "aten.conv3d.padding", "aten.conv_transpose1d.default", "aten.conv_transpose2d.input",
         "aten.conv_transpose3d.input")
def _conv(t, node):
    key = _key(node)
    x = t.tensor(node.args[0])
    weight = t.weight_name(node.args[1], "weight")
    if weight is None:
        raise AitError("a convolution whose weight is computed in the model")
    bias_arg = arg(node, 2, "bias")
    bias = t.weight_name(bias_arg, "bias") if bias_arg is not None else None
    if bias_arg is not None and bias is None:
        raise AitError("a convolution whose bias is computed in the model")
    transposed, output_padding = False, 0
    if key == "aten.convolution.default":
        stride, padding, dilation, transposed, output_padding, groups = node.args[3:9]
    elif key.startswith("aten.conv_transpose"):
        transposed = True
        stride, padding = arg(node, 3, "stride", 1), arg(node, 4, "padding", 0)
        output_padding, groups = arg(node, 5, "output_padding", 0), arg(node, 6, "groups", 1)
        dilation = arg(node, 7, "dilation", 1)
    else:
        stride, padding = arg(node, 3, "stride", 1), arg(node, 4, "padding", 0)
        dilation, groups = arg(node, 5, "dilation", 1), arg(node, 6, "groups", 1)
    if isinstance(padding, str):
        padding = _same_padding(t.g.weights[weight].shape[2:], dilation, padding)
    return convolution(t.lower, x, weight, bias, stride, padding, dilation, groups,
                       t.weight_node_name(weight), transposed, output_padding)


@handles("aten.im2col.default")
def _im2col(t, node):
    """F.unfold / nn.Unfold: each window's taps as channels (composites.unfold)."""
    x = t.tensor(node.args[0])
    if x.rank != 4:
        raise AitError("unfold of a 3-d (unbatched) tensor (only [N, C, H, W])")
    kernel, dilation, padding, stride = ([int(v) for v in a] for a in node.args[1:5])
    return unfold(t.lower, x, kernel, dilation, padding, stride)


@handles("aten.col2im.default")
def _col2im(t, node):
    """F.fold / nn.Fold: each window's taps put back in place and summed where windows overlap,
    cropped by the padding. Windows that tile the output (stride = kernel, dilation 1; MobileViT
    V2's patches back to a feature map) are a reshape and a permute; others (VOLO's outlook
    attention: kernel 3, stride 2) a sum of one term per tap (_fold_taps)."""
    x = t.tensor(node.args[0])
    size, kernel, dilation, padding, stride = ([int(v) for v in a] for a in node.args[1:6])
    if x.rank != 3:
        raise AitError("fold of a 2-d (unbatched) tensor (only [N, C*kh*kw, L])")
    (kh, kw), (ph, pw) = kernel, padding
    full = [size[0] + 2 * ph, size[1] + 2 * pw]
    n, c = x.source_shape[0], Dim.of(x.source_shape[1].value // (kh * kw))
    if stride != kernel or dilation != [1, 1]:
        out = _fold_taps(t.lower, x, n, c, full, kernel, dilation, stride)
    else:
        if full[0] % kh or full[1] % kw:
            raise AitError(f"fold to {size} (padding {padding}): the windows {kernel} do not "
                           "tile it")
        rows, cols = full[0] // kh, full[1] // kw
        tiles = t.lower.reshape(x, (n, c, Dim.of(kh), Dim.of(kw), Dim.of(rows), Dim.of(cols)))
        out = t.lower.reshape(t.lower.permute(tiles, (0, 1, 4, 2, 5, 3)),
                              (n, c, Dim.of(full[0]), Dim.of(full[1])))
    if ph:
        out = t.lower.slice(out, 2, ph, ph + size[0])
    if pw:
        out = t.lower.slice(out, 3, pw, pw + size[1])
    return out


def _fold_taps(lower, x, n, c, full, kernel, dilation, stride):
    """The padded fold output [N, C, H+2ph, W+2pw] of windows that overlap or skip: for each tap
    (i, j), its [N, C, rows, cols] values spread `stride` apart (zeros between them: a new axis
    padded and merged), padded to start at (i*dh, j*dw), cropped to the output and summed."""
    (kh, kw), (dh, dw), (sh, sw) = kernel, dilation, stride
    rows = (full[0] - dh * (kh - 1) - 1) // sh + 1
    cols = (full[1] - dw * (kw - 1) - 1) // sw + 1
    if rows < 1 or cols < 1 or x.source_shape[2] != Dim.of(rows * cols):
        raise AitError(f"fold of {x.source_shape[2]} windows to {full} (kernel {kernel}, stride "
                       f"{stride}, dilation {dilation}): the counts disagree")
    taps = lower.reshape(x, (n, c, Dim.of(kh * kw), Dim.of(rows), Dim.of(cols)))
    out = None
    for i in range(kh):
        for j in range(kw):
            tap = lower.select(taps, 2, i * kw + j)  # [N, C, rows, cols]
            if sh > 1 or sw > 1:
                tap = lower.reshape(tap, (n, c, Dim.of(rows), Dim.of(1), Dim.of(cols), Dim.of(1)))
                tap = lower.pad(tap, [(0, 0)] * 3 + [(0, sh - 1), (0, 0), (0, sw - 1)])
                tap = lower.reshape(tap, (n, c, Dim.of(rows * sh), Dim.of(cols * sw)))
            spans = []
            for axis, start, length, total in ((2, i * dh, rows * sh, full[0]),
                                               (3, j * dw, cols * sw, full[1])):
                if start + length > total:
                    tap = lower.slice(tap, axis, 0, total - start)
                    length = total - start
                spans.append((start, total - start - length))
            tap = lower.pad(tap, [(0, 0), (0, 0)] + spans)
            out = tap if out is None else lower.binary("add", out, tap)
    return out


def _same_padding(kernel, dilation, mode: str):
    if mode == "valid":
        return 0
    d = dilation if isinstance(dilation, (list, tuple)) else [dilation] * len(kernel)
    total = [dd * (k - 1) for k, dd in zip(kernel, d)]
    if any(p % 2 for p in total):
        raise AitError("padding='same' with an even window pads unevenly (not supported)")
    return [p // 2 for p in total]



@handles("aten.lstm.input", "aten.gru.input")
def _recurrent(t, node):
    """nn.LSTM / nn.GRU, unrolled (recurrent.py)."""
    kind = "lstm" if _key(node) == "aten.lstm.input" else "gru"
    x, hx, params = node.args[0], node.args[1], node.args[2]
    has_biases, layers, _, train, bidirectional, batch_first = node.args[3:9]
    if train:
        raise AitError("a recurrent layer in training mode (call model.eval() first)")
    per_cell = 4 if has_biases else 2
    directions = 2 if bidirectional else 1
    if len(params) != per_cell * layers * directions:
        raise AitError("an LSTM with proj_size (projected hidden states) is not supported")
    names = [t.weight_name(p) for p in params]
    if None in names:
        raise AitError("a recurrent layer whose weights are computed in the model")
    cells = [Cell(*names[i:i + 2], *(names[i + 2:i + 4] if has_biases else (None, None)))
             for i in range(0, len(names), per_cell)]
    hidden = t.g.weights[names[1]].shape[1]
    states = [None if _zeros(s) else t.tensor(s) for s in (hx if kind == "lstm" else [hx])]
    out, h, c = run_layers(t.lower, kind, t.tensor(x), cells, hidden, bidirectional,
                           batch_first, *states, name=t.lower.path or kind)
    return [out, h, c] if kind == "lstm" else [out, h]


def _zeros(arg) -> bool:
    """A state the model starts from zeros (torch.zeros in nn.LSTM's forward)."""
    return hasattr(arg, "op") and _key(arg) in ("aten.zeros.default", "aten.new_zeros.default",
                                                "aten.zeros_like.default")


# -- normalization, pooling ----------------------------------------------------------------------

@handles("aten.layer_norm.default", "aten.native_layer_norm.default")
def _layer_norm(t, node):
    x = t.tensor(node.args[0])
    shape = node.args[1]
    if len(shape) != 1:
        raise AitError("layer_norm over more than the last dim is not supported")
    w, b = arg(node, 2, "weight"), arg(node, 3, "bias")
    eps = arg(node, 4, "eps", 1e-5)
    attrs = {} if eps == 1e-5 else {"eps": float(eps)}
    weights, name = {}, None
    if w is not None:
        wn, bn = t.weight_name(w), t.weight_name(b) if b is not None else None
        if wn is None or bn is None:
            # a weight without a bias (LayerNorm(bias=False): MPT, OLMo-2) or one the model
            # computes: the plain normalization, then the scale and the shift as tensors
            attrs["affine"] = False
            out = t.lower.binary("mul", t.lower.last_axis("layer_norm", x, attrs), t.tensor(w))
            if b is not None:
                out = t.lower.binary("add", out, t.tensor(b))
            return [out, None, None] if _key(node).startswith("aten.native") else out
        weights, name = {"weight": wn, "bias": bn}, t.weight_node_name(wn)
    else:
        attrs["affine"] = False
        if b is not None:
            raise AitError("layer_norm with a bias but no weight")
    out = t.lower.last_axis("layer_norm", x, attrs, name=name, weights=weights)
    return [out, None, None] if _key(node).startswith("aten.native") else out


@handles("aten.group_norm.default", "aten.native_group_norm.default")
def _group_norm(t, node):
    x = t.tensor(node.args[0])
    native = _key(node) == "aten.native_group_norm.default"
    groups = node.args[6] if native else arg(node, 1, "num_groups")
    w, b = (node.args[1], node.args[2]) if native else (arg(node, 2, "weight"), arg(node, 3, "bias"))
    eps = node.args[7] if native else arg(node, 4, "eps", 1e-5)
    out = group_norm(t.lower, x, int(groups), t.tensor(w) if w is not None else None,
                     t.tensor(b) if b is not None else None, eps)
    return [out, None, None] if native else out


@handles("aten.batch_norm.default", "aten._native_batch_norm_legit_no_training.default")
def _batch_norm(t, node):
    x = t.tensor(node.args[0])
    names = [t.weight_name(a) for a in node.args[1:5]]
    if None in names:
        raise AitError("batch_norm without affine weights or running statistics")
    if _key(node) == "aten.batch_norm.default":
        if node.args[5]:
            raise AitError("batch_norm in training mode (call model.eval() first)")
        eps = node.args[7]
    else:
        eps = node.args[6]
    roles = dict(zip(("weight", "bias", "running_mean", "running_var"), names))
    out = t.lower.batch_norm(x, roles, eps, t.weight_node_name(names[0]))
    return [out, None, None] if _key(node).startswith("aten._native") else out


@handles("aten.max_pool2d.default", "aten.max_pool2d_with_indices.default")
def _max_pool(t, node):
    x = t.tensor(node.args[0])
    kernel = node.args[1]
    stride = arg(node, 2, "stride", []) or None
    padding, dilation = arg(node, 3, "padding", 0), arg(node, 4, "dilation", 1)
    out = t.lower.pool("max_pool2d", x, kernel, stride, padding, dilation,
                       ceil_mode=bool(arg(node, 5, "ceil_mode", False)))
    return [out, None] if "indices" in _key(node) else out


@handles("aten.max_pool3d.default", "aten.max_pool3d_with_indices.default",
         "aten.avg_pool3d.default")
def _pool3d(t, node):
    """3-d pools (S3D) as 2-d pools of each frame and their time taps (composites.pool3d)."""
    x = t.tensor(node.args[0])
    avg = _key(node).startswith("aten.avg")
    kernel = _triple(node.args[1])
    stride = _triple(arg(node, 2, "stride", []) or kernel)
    padding = _triple(arg(node, 3, "padding", 0))
    ceil = arg(node, 4 if avg else 5, "ceil_mode", False)
    if avg and arg(node, 6, "divisor_override") is not None or ceil or \
            not avg and _triple(arg(node, 4, "dilation", 1)) != [1, 1, 1]:
        raise AitError("a 3-d pool with ceil_mode, dilation or divisor_override")
    out = pool3d(t.lower, x, "avg_pool2d" if avg else "max_pool2d", kernel, stride, padding,
                 bool(arg(node, 5, "count_include_pad", True)) if avg else True)
    return [out, None] if "indices" in _key(node) else out


def _triple(v) -> list:
    return [int(v)] * 3 if isinstance(v, int) else [int(v[0])] * 3 if len(v) == 1 else \
        [int(a) for a in v]


@handles("aten.avg_pool2d.default")
def _avg_pool(t, node):
    x = t.tensor(node.args[0])
    if arg(node, 6, "divisor_override") is not None:
        raise AitError("avg_pool2d with divisor_override is not supported")
    return t.lower.pool("avg_pool2d", x, node.args[1], arg(node, 2, "stride", []) or None,
                        arg(node, 3, "padding", 0),
                        count_include_pad=arg(node, 5, "count_include_pad", True),
                        ceil_mode=bool(arg(node, 4, "ceil_mode", False)))


@handles("aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default",
         "aten.adaptive_avg_pool3d.default", "aten._adaptive_avg_pool3d.default",
         "aten.adaptive_avg_pool1d.default")
def _adaptive_avg_pool(t, node):
    return t.lower.adaptive_avg_pool(t.tensor(node.args[0]), node.args[1])


RESIZES = {  # ATen op -> (mode, coordinates, rounding); bi*'s depend on align_corners
    "aten.upsample_nearest2d": ("nearest", "asymmetric", "floor"),
    "aten._upsample_nearest_exact2d": ("nearest", "half_pixel", "round_prefer_ceil"),
    "aten.upsample_bilinear2d": ("linear", "half_pixel", "floor"),
    "aten.upsample_bicubic2d": ("cubic", "half_pixel", "floor"),
}


@handles(*[f"{k}.{o}" for k in RESIZES for o in ("vec", "default")])
def _upsample(t, node):
    """F.interpolate: the output size is the node's own; PyTorch maps coordinates by the given
    scale factor rather than the size ratio, so the two must agree."""
    x = t.tensor(node.args[0])
    base, overload = _key(node).rsplit(".", 1)
    mode, coordinates, rounding = RESIZES[base]
    size = [int(d.value) if d.is_static else None for d in t.shape(node)[2:]]
    if None in size:
        raise AitError("resizing to a size that follows a dim (only static sizes)")
    if mode != "nearest":
        corners = arg(node, 2, "align_corners", False)
        coordinates = "align_corners" if corners else coordinates
        scales = arg(node, 3, "scale_factors") if overload == "vec" else \
            [arg(node, 3, "scales_h"), arg(node, 4, "scales_w")]
    else:
        scales = arg(node, 2, "scale_factors") if overload == "vec" else \
            [arg(node, 2, "scales_h"), arg(node, 3, "scales_w")]
    for d, out, scale in zip(x.source_shape[2:], size, scales or [None, None]):
        if scale and coordinates != "align_corners" and d.value * float(scale) != out:
            raise AitError(f"a scale factor of {scale} from size {d.value} to {out} (the factor "
                           "must give a whole size, or pass size= instead)")
    return t.lower.resize(x, size, mode, coordinates, rounding)


RESIZES_1D = {"aten.upsample_nearest1d": ("nearest", "asymmetric"),
              "aten._upsample_nearest_exact1d": ("nearest", "half_pixel"),
              "aten.upsample_linear1d": ("linear", "half_pixel")}


@handles(*[f"{k}.{o}" for k in RESIZES_1D for o in ("vec", "default")])
def _upsample_1d(t, node):
    """F.interpolate of [N, C, L]: the 2-d resize of [N, C, 1, L]."""
    x = t.tensor(node.args[0])
    mode, coordinates = RESIZES_1D[_key(node).rsplit(".", 1)[0]]
    length = t.shape(node)[-1]
    if not length.is_static:
        raise AitError("resizing to a length that follows a dim (only static sizes)")
    if mode == "linear" and arg(node, 2, "align_corners", False):
        coordinates = "align_corners"
    rounding = "round_prefer_ceil" if coordinates == "half_pixel" and mode == "nearest" \
        else "floor"
    return t.lower.as_row_image(x, lambda image: t.lower.resize(
        image, [1, length.value], mode, coordinates, rounding))


@handles("aten.max_pool1d.default", "aten.max_pool1d_with_indices.default",
         "aten.avg_pool1d.default")
def _pool_1d(t, node):
    """1-d pools of [N, C, L] as 2-d pools of [N, C, 1, L] with windows of one row."""
    x = t.tensor(node.args[0])
    avg = _key(node).startswith("aten.avg")
    one = lambda v: [int(v)] if isinstance(v, int) else [int(a) for a in v]  # noqa: E731
    kernel = one(node.args[1])
    stride = one(arg(node, 2, "stride", []) or kernel)
    padding = one(arg(node, 3, "padding", 0))
    ceil = bool(arg(node, 4 if avg else 5, "ceil_mode", False))
    if avg:
        out = t.lower.as_row_image(x, lambda image: t.lower.pool(
            "avg_pool2d", image, [1] + kernel, [1] + stride, [0] + padding,
            count_include_pad=bool(arg(node, 5, "count_include_pad", True)), ceil_mode=ceil))
    else:
        out = t.lower.as_row_image(x, lambda image: t.lower.pool(
            "max_pool2d", image, [1] + kernel, [1] + stride, [0] + padding,
            [1] + one(arg(node, 4, "dilation", 1)), ceil_mode=ceil))
    return [out, None] if "indices" in _key(node) else out


@handles("aten.grid_sampler.default", "aten.grid_sampler_2d.default")
def _grid_sample(t, node):
    """F.grid_sample: mode 0 bilinear, 1 nearest; padding 0 zeros, 1 border (sampling.py)."""
    mode = {0: "bilinear", 1: "nearest", 2: "bicubic"}[node.args[2]]
    padding = {0: "zeros", 1: "border", 2: "reflection"}[node.args[3]]
    return grid_sample(t.lower, t.tensor(node.args[0]), t.tensor(node.args[1]), mode, padding,
                       bool(node.args[4]))


@handles("aten._upsample_bicubic2d_aa.default", "aten._upsample_bicubic2d_aa.vec",
         "aten._upsample_bilinear2d_aa.default", "aten._upsample_bilinear2d_aa.vec")
def _upsample_antialiased(t, node):
    raise AitError("F.interpolate with antialias=True is not supported (only antialias=False: "
                   "a fixed number of taps)")


@handles("aten.amax.default", "aten.amin.default", "aten.max.dim", "aten.min.dim",
         "aten.max.default", "aten.min.default")
def _extreme(t, node):
    """torch.amax/amin, and max/min over a dim (the values, and the first index of the extreme
    where the model reads it) or over everything."""
    x = t.tensor(node.args[0])
    key = _key(node)
    if key.endswith(".dim"):
        axes, keepdim = [node.args[1]], bool(arg(node, 2, "keepdim", False))
    elif key.endswith(".default") and key.startswith(("aten.max", "aten.min")):
        axes, keepdim = list(range(x.rank)), False
    else:
        axes = list(arg(node, 1, "dim", []) or range(x.rank))
        keepdim = bool(arg(node, 2, "keepdim", False))
    out = (t.lower.max if "max" in key else t.lower.min)(x, axes, keepdim)
    if not key.endswith(".dim"):
        return out
    read = any(user.args[1:2] == (1,) for user in node.users)  # the indices, by getitem
    return [out, t.lower.argmax(x, axes[0], keepdim, smallest="min" in key) if read else None]


@handles("aten.argmax.default", "aten.argmin.default")
def _argmax(t, node):
    x, axis = t.tensor(node.args[0]), arg(node, 1, "dim")
    keepdim = bool(arg(node, 2, "keepdim", False))
    if axis is None:  # of the flattened tensor
        x, axis, keepdim = t.lower.flat(x), 0, False
    return t.lower.argmax(x, axis, keepdim, smallest="argmin" in _key(node))


@handles("aten.adaptive_max_pool2d.default")
def _adaptive_max_pool(t, node):
    x = t.tensor(node.args[0])
    sizes = [int(s) for s in node.args[1]]
    if sizes == [1, 1]:
        return [t.lower.max(x, [2, 3], keepdim=True), None]
    spans = x.source_shape[2:]
    if not all(d.is_static and d.value % m == 0 for d, m in zip(spans, sizes)):
        raise AitError(f"adaptive_max_pool2d to {sizes} from {spans[0]}x{spans[1]} (only size 1 "
                       "or even divisions)")
    kernel = [d.value // m for d, m in zip(spans, sizes)]
    return [t.lower.pool("max_pool2d", x, kernel, kernel, 0), None]


@handles("aten.mean.dim")
def _mean(t, node):
    dims = node.args[1]
    if dims is None:
        raise AitError("mean over every dim is not supported")
    return t.lower.mean(t.tensor(node.args[0]), list(dims), bool(arg(node, 2, "keepdim", False)))


@handles("aten.sum.dim_IntList")
def _sum(t, node):
    x, dims = t.tensor(node.args[0]), arg(node, 1, "dim")
    x = t.lower.cast(x, t.dtype(node))
    axes = list(range(x.rank)) if not dims else list(dims)
    return t.lower.sum(x, axes, bool(arg(node, 2, "keepdim", False)))


@handles("aten.linalg_vector_norm.default")
def _vector_norm(t, node):
    x = t.lower.cast(t.tensor(node.args[0]), t.dtype(node))
    dims = arg(node, 2, "dim")
    axes = list(range(x.rank)) if not dims else list(dims)
    return t.lower.vector_norm(x, arg(node, 1, "ord", 2), axes, bool(arg(node, 3, "keepdim", False)))


@handles("aten.softmax.int", "aten._softmax.default")
def _softmax(t, node):
    x = t.tensor(node.args[0])
    return t.lower.cast(t.lower.softmax(x, node.args[1]), t.dtype(node))
