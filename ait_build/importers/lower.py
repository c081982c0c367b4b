"""Source-model operations in the source's own terms (NCHW, PyTorch/ONNX axes and shapes),
written as our ops: both importers call these, so layouts, casts and scalars are handled once.

`path` and `where` name the source module and location of the node being translated; the
frontend sets them before each node.
"""

from __future__ import annotations

import numpy as np

from ait_build.errors import AitError
from ait_build.importers.graph import NHWC, ImportGraph, Value, dim_attr, identity, shape_attr
from ait_build.ir.dims import Dim
from ait_build.ir.dtypes import FLOAT_DTYPES
from ait_build.ops.conv import out_count
from ait_build.passes.rewrite import inverse_dims



class Lower:
    def __init__(self, graph: ImportGraph):
        self.g = graph
        self.path = ""
        self.where = ""
        self.hint = ""  # the source op's name: what the node that stands for it is called
        self.leaf = False  # the source node is the whole of a leaf module (nn.ReLU): use its name

    # -- plumbing -----------------------------------------------------------------------------
    def emit(self, op, inputs, attrs=None, hint=None, **kw):
        if kw.get("name") is None and hint is None and self.leaf and self.path:
            kw["name"] = self.path
        return self.g.emit(op, inputs, attrs, path=self.path, hint=hint or self.hint or op,
                           where=self.where, **kw)

    def layout(self, value: Value, perm) -> Value:
        return self.g.with_perm(value, perm, self.path, self.where)

    def plain(self, value: Value) -> Value:
        return self.g.source(value, self.path, self.where)

    def fail(self, what: str):
        raise AitError(f"{self.where}: {what}")

    def our_axis(self, value: Value, axis: int) -> int:
        """Where source axis `axis` sits in our stored tensor."""
        return value.perm.index(axis % value.rank)

    # -- elementwise --------------------------------------------------------------------------
    def unary(self, op: str, x: Value, **attrs) -> Value:
        return self.emit(op, [x], attrs, perm=x.perm)

    def cast(self, x: Value, dtype: str, hint: str | None = "cast") -> Value:
        """`hint` None: the cast stands for the source node (a .to(dtype))."""
        if x.dtype == dtype:
            return x
        return self.emit("cast", [x], {"dtype": dtype}, perm=x.perm, hint=hint)

    def _common(self, operands: list) -> tuple:
        """(rank, perm) the operands of a broadcasting op are brought to: the layout of the
        highest-rank operand that is not plain, so an NHWC conv output stays NHWC. Between
        operands of the full shape in different layouts, one of them plain, the plain one's:
        a residual stream (`attn(x) + x`) keeps the source's order rather than taking the
        branch's (torch's MultiheadAttention works seq-first inside and hands back a
        transposed view), and the permute goes to the branch, where simplify can cancel it."""
        tensors = [v for v in operands if isinstance(v, Value)]
        rank = max(v.rank for v in tensors)
        full = [v for v in tensors if v.rank == rank and tuple(v.source_shape) == tuple(
            max_dims(t.source_shape[i] for t in tensors if t.rank == rank) for i in range(rank))]
        if len({v.perm for v in full}) > 1 and any(v.plain for v in full):
            return rank, identity(rank)
        for v in tensors:
            if v.rank == rank and not v.plain:
                return rank, v.perm
        return rank, identity(rank)

    def _aligned(self, operands: list) -> tuple:
        rank, perm = self._common(operands)
        out = [self.g.broadcast_to_layout(v, rank, perm, self.path, self.where)
               if isinstance(v, Value) else v for v in operands]
        return out, perm

    def binary(self, op: str, a, b, dtype: str | None = None) -> Value:
        """a op b (Values or numbers) in `dtype` (default: the tensor operands' own)."""
        if not isinstance(a, Value) and not isinstance(b, Value):
            self.fail(f"{op} of two numbers")
        if not isinstance(a, Value):  # number op tensor
            if op in ("add", "mul", "minimum", "maximum", "equal", "not_equal"):
                a, b = b, a
            elif op == "sub":  # n - x = -x + n
                return self.binary("add", self.binary("mul", b, -1, dtype), a, dtype)
            else:
                a = self.number(a, b.dtype if dtype is None else dtype, b.rank)
        dtype = dtype or a.dtype
        if isinstance(a, Value):
            a = self.cast(a, dtype) if op not in COMPARE_OPS else a
        if isinstance(b, Value):
            if op in COMPARE_OPS:
                common = promote(a.dtype, b.dtype)
                a, b = self.cast(a, common), self.cast(b, common)
            else:
                b = self.cast(b, dtype)
            (a, b), perm = self._aligned([a, b])
            return self.emit(op, [a, b], perm=perm)
        if a.dtype not in FLOAT_DTYPES and isinstance(b, float) and not b.is_integer():
            a = self.cast(a, self.g.dtype)
        return self.emit(op, [a], {"scalar": _number(b, a.dtype)}, perm=a.perm)

    def number(self, value, dtype: str, rank: int = 1) -> Value:
        """A number as a [1]-shaped `constant` node."""
        attrs = {"shape": [1] * max(rank, 1), "value": float(value)}
        if dtype != self.g.dtype:
            attrs["dtype"] = dtype
        return self.emit("constant", [], attrs, hint="constant")

    def where_(self, cond: Value, a, b) -> Value:
        dtype = a.dtype if isinstance(a, Value) else b.dtype if isinstance(b, Value) else self.g.dtype
        ops = [cond] + [v if isinstance(v, Value) else self.number(v, dtype, cond.rank)
                        for v in (a, b)]
        ops = [ops[0]] + [self.cast(v, dtype) for v in ops[1:]]
        ops, perm = self._aligned(ops)
        return self.emit("where", ops, perm=perm)

    def power(self, x: Value, exponent) -> Value:
        if exponent == 1:
            return x
        if exponent == 2:
            return self.emit("mul", [x, x], perm=x.perm, hint="square")
        if exponent == 3:
            sq = self.emit("mul", [x, x], perm=x.perm, hint="square")
            return self.emit("mul", [sq, x], perm=x.perm, hint="cube")
        if exponent == 0.5:
            return self.unary("sqrt", x)
        self.fail(f"x ** {exponent}: only the exponents 0.5, 1, 2 and 3 are supported")

    # -- GEMM-shaped ----------------------------------------------------------------------------
    def conv2d(self, x: Value, weight: str, bias: str | None, stride, padding, dilation,
               groups: int, name: str | None) -> Value:
        w = self.g.weights[weight]
        if w.ndim != 4:
            self.fail(f"conv with a {w.ndim}-d weight: only 2-d convolutions are supported")
        x = self.layout(x, NHWC)
        attrs = {"out_channels": int(w.shape[0]), "kernel": _pair(w.shape[2:]),
                 "stride": _pair(stride), "padding": _pair(padding), "dilation": _pair(dilation),
                 "groups": int(groups), "bias": bias is not None}
        roles = {"weight": weight, **({"bias": bias} if bias else {})}
        return self.emit("conv2d", [x], _lean(attrs, CONV_DEFAULTS), hint="conv", name=name,
                         weights=roles, perm=NHWC)

    def linear(self, x: Value, weight: str, bias: str | None, name: str | None,
               in_out: bool = False) -> Value:
        """x @ W.T + b over the last source axis (W [out, in]; [in, out] with in_out)."""
        if x.perm[-1] != x.rank - 1:
            x = self.plain(x)
        w = self.g.weights[weight]
        attrs = {"out_features": int(w.shape[1] if in_out else w.shape[0]), "bias": bias is not None}
        if in_out:
            attrs["weight_layout"] = "in_out"
        roles = {"weight": weight, **({"bias": bias} if bias else {})}
        return self.emit("linear", [x], _lean(attrs, {"bias": True}), hint="linear", name=name,
                         weights=roles, perm=x.perm)

    def matmul(self, a: Value, b: Value, alpha: float = 1.0) -> Value:
        a = self.plain(a)
        attrs = {}
        swap = tuple(range(b.rank - 2)) + (b.rank - 1, b.rank - 2)
        if b.rank >= 2 and b.perm == swap:  # a source transpose of the last two dims: free
            attrs["transpose_b"] = True
        else:
            b = self.plain(b)
        if alpha != 1.0:
            attrs["alpha"] = float(alpha)
        if a.rank < 2 or b.rank < 2:
            self.fail("matmul of a 1-d tensor (unsqueeze it first)")
        return self.emit("matmul", [a, b], attrs)

    # -- rows, windows ------------------------------------------------------------------------
    def last_axis(self, op: str, x: Value, attrs: dict, name=None, weights=None) -> Value:
        """An op over the source's last axis (layer_norm): any layout that keeps it last."""
        if x.perm[-1] != x.rank - 1:
            x = self.plain(x)
        return self.emit(op, [x], attrs, name=name, weights=weights, perm=x.perm)

    def softmax(self, x: Value, axis: int) -> Value:
        return self.emit("softmax", [x], {"axis": self.our_axis(x, axis)}, perm=x.perm)

    def channels_last(self, x: Value) -> tuple:
        """The layout with source axis 1 (channels) last: NHWC for images."""
        return (0,) + tuple(range(2, x.rank)) + (1,) if x.rank > 2 else identity(x.rank)

    def batch_norm(self, x: Value, roles: dict, eps: float, name: str | None) -> Value:
        perm = self.channels_last(x)
        x = self.layout(x, perm)
        return self.emit("batch_norm", [x], {"eps": float(eps)} if eps != 1e-5 else {},
                         hint="batch_norm", name=name, weights=roles, perm=perm)

    def pool(self, op: str, x: Value, kernel, stride, padding, dilation=1,
             count_include_pad=True, ceil_mode=False) -> Value:
        x = self.layout(x, NHWC)
        if op == "avg_pool2d" and ceil_mode and count_include_pad and _pair(padding) != 0:
            # the padding counts, what lies past it does not: pad first, then pool without,
            # keeping ceil_mode where it adds a window (one the original rule would drop, a
            # window starting in the trailing padding, may start inside the padded input)
            if not all(d.is_static for d in x.shape[1:3]):
                self.fail("avg_pool2d of a symbolic image size")
            kernel2, stride2, pads = (_both(v) for v in (kernel, stride or kernel, padding))
            extra = {out_count(n.value, k, st, p, 1, True) != out_count(n.value, k, st, p, 1)
                     for n, k, st, p in zip(x.shape[1:3], kernel2, stride2, pads)}
            if len(extra) > 1:
                self.fail("avg_pool2d with ceil_mode and count_include_pad whose padding adds a "
                          "partial window along one axis only")
            x = self.pad(x, [(0, 0), (0, 0), (pads[0], pads[0]), (pads[1], pads[1])])
            padding, ceil_mode = 0, extra.pop()
        attrs = {"kernel": _pair(kernel), "stride": _pair(stride) if stride else None,
                 "padding": _pair(padding), "ceil_mode": bool(ceil_mode)}
        if op == "max_pool2d":
            attrs["dilation"] = _pair(dilation)
        else:
            attrs["count_include_pad"] = bool(count_include_pad)
        return self.emit(op, [x], _lean(attrs, POOL_DEFAULTS), perm=NHWC)

    def adaptive_avg_pool(self, x: Value, sizes) -> Value:
        """Adaptive average pooling of the source's last len(sizes) axes to `sizes`: a mean
        where every size is 1, avg_pool2d where an image divides evenly, else, axis by axis, a
        product with that axis' averaging matrix (PyTorch's windows: output i of m over n inputs
        averages inputs [floor(i n / m), ceil((i + 1) n / m)), of unequal sizes or overlapping
        where m does not divide n, e.g. VGG's 7x7 from a 5x5 or 10x10 map)."""
        sizes = [int(s) for s in sizes]
        axes = list(range(x.rank - len(sizes), x.rank))
        if all(s == 1 for s in sizes):
            return self.mean(x, axes, keepdim=True)
        spans = [x.source_shape[a] for a in axes]
        if not all(d.is_static for d in spans):
            self.fail(f"adaptive average pooling to {sizes} of a symbolic size "
                      f"{[str(d) for d in spans]}")
        spans = [d.value for d in spans]
        if x.rank == 4 and all(n % m == 0 for n, m in zip(spans, sizes)):
            kernel = [n // m for n, m in zip(spans, sizes)]
            return x if kernel == [1, 1] else self.pool("avg_pool2d", x, kernel, kernel, 0)
        for axis, n, m in zip(axes, spans, sizes):
            if n == m:
                continue
            rows = self.transpose(x, axis, -1)
            averages = self.g.constant(averaging_matrix(n, m), self.path, "window_means",
                                       self.where)
            x = self.transpose(self.matmul(rows, averages), axis, -1)
        return x

    def resize(self, x: Value, size, mode: str, coordinates: str, rounding: str = "floor"):
        """An NCHW image resampled to `size` ([height, width]): resize2d, NHWC."""
        if x.rank != 4:
            self.fail(f"resizing a {x.rank}-d tensor: only images ([N, C, H, W])")
        x = self.layout(x, NHWC)
        attrs = {"size": _pair(size), "mode": mode, "coordinates": coordinates,
                 "rounding": rounding}
        return self.emit("resize2d", [x], _lean(attrs, RESIZE_DEFAULTS), perm=NHWC)

    def mean(self, x: Value, axes, keepdim: bool) -> Value:
        """The mean over source `axes`: global_avg_pool, after a reshape when the axes are not
        an image's H and W."""
        axes = sorted(a % x.rank for a in axes)
        if x.rank == 4 and axes == [2, 3]:
            return self.emit("global_avg_pool", [self.layout(x, NHWC)],
                             {"keepdims": True} if keepdim else {},
                             perm=NHWC if keepdim else identity(2))
        if x.rank > 2 and x.perm == self.channels_last(x) and axes == list(range(2, x.rank)):
            # channels-last frames or sequences ([N, T, H, W, C]): every position one row
            n, c = x.shape[0], x.shape[-1]
            grid = self.emit("reshape", [x], {"shape": shape_attr(
                (n, _prod(x.shape[1:-1]), Dim.of(1), c), x.shape)}, hint="rows")
            pooled = self.emit("global_avg_pool", [grid])  # [N, C]
            return self.reshape(pooled, (n, c) + (Dim.of(1),) * (x.rank - 2) if keepdim
                                else (n, c))
        pooled, out = self._over_rows(x, axes, keepdim, "mean",
                                      lambda grid, count: self.emit("global_avg_pool", [grid]))
        return self.reshape(pooled, out)

    def _over_rows(self, x: Value, axes: list, keepdim: bool, what: str, reduce) -> tuple:
        """(reduce(grid, count), the reduction's shape): x in the source's order seen as
        [outer, count, 1, inner], the neighbouring sorted `axes` in the count."""
        x = self.plain(x)
        if axes != list(range(axes[0], axes[-1] + 1)):
            self.fail(f"{what} over axes {axes}: only neighbouring axes are supported")
        shape = x.shape
        outer, inner = _prod(shape[:axes[0]]), _prod(shape[axes[-1] + 1:])
        count = _prod(shape[axes[0]:axes[-1] + 1])
        grid = self.emit("reshape", [x], {"shape": shape_attr((outer, count, Dim.of(1), inner),
                                                               shape)}, hint="rows")
        kept = tuple(Dim.of(1) if i in axes else d for i, d in enumerate(shape))
        out = kept if keepdim else tuple(d for i, d in enumerate(shape) if i not in axes)
        return reduce(grid, count), out

    def max(self, x: Value, axes, keepdim: bool) -> Value:
        """The largest element over source `axes` (neighbouring, a static number of them):
        max_pool2d with one window over all of them, of an NHWC image's H and W as they are,
        else of [outer, count, 1, inner] (torch.amax, max(dim) values, adaptive max pooling to
        size 1, ONNX ReduceMax)."""
        axes = sorted(a % x.rank for a in axes)
        if x.rank == 4 and axes == [2, 3] and all(d.is_static for d in x.source_shape[2:]):
            window = [d.value for d in x.source_shape[2:]]
            pooled = self.pool("max_pool2d", x, window, window, 0)
            return pooled if keepdim else self.reshape(pooled, tuple(x.source_shape[:2]))
        def window(grid, count):  # one max_pool2d window over the whole count
            if not count.is_static:
                self.fail(f"a max over {count} elements (only a static number: give those "
                          "sizes as numbers in --input)")
            return self.emit("max_pool2d", [grid], {"kernel": [count.value, 1]})

        pooled, out = self._over_rows(x, axes, keepdim, "max", window)
        return self.reshape(pooled, out or (Dim.of(1),))  # our tensors have rank >= 1

    def min(self, x: Value, axes, keepdim: bool) -> Value:
        """The least element over `axes`: minus the largest of minus x."""
        negated = self.binary("mul", x, -1.0)
        return self.binary("mul", self.max(negated, axes, keepdim), -1.0)

    def argmax(self, x: Value, axis: int, keepdim: bool, smallest: bool = False) -> Value:
        """The first position of the largest (smallest) element along source `axis`, as int64:
        the least position whose element equals the max there (CLIP's end-of-text token).
        Computed in float32: integers beyond 2^24 may tie."""
        axis %= x.rank
        n = x.source_shape[axis]
        if not n.is_static:
            self.fail(f"argmax over {n} elements (only a static number: give that size as a "
                      "number in --input)")
        values = self.cast(x, "float32") if x.dtype != "float32" else x
        best = (self.min if smallest else self.max)(values, [axis], keepdim=True)
        hit = self.binary("equal", values, best)
        positions = self.reshape(self.iota((n,), "float32"),
                                 (n,) + (Dim.of(1),) * (x.rank - axis - 1))
        first = self.min(self.where_(hit, positions, float(n.value)), [axis], keepdim)
        return self.cast(first, "int64")

    def sum(self, x: Value, axes, keepdim: bool) -> Value:
        """The sum over source `axes`: their mean times how many elements it averages."""
        axes = [a % x.rank for a in axes]
        count = _prod(x.source_shape[a] for a in axes)
        if not count.is_static:
            self.fail(f"a sum over {count} elements (only a static number)")
        return self.binary("mul", self.mean(x, axes, keepdim), float(count.value))

    def vector_norm(self, x: Value, order, axes, keepdim: bool) -> Value:
        """torch.linalg.vector_norm / ONNX ReduceL1, ReduceL2 over source `axes` (Swin V2's
        cosine attention, ConvNeXt V2's global response norm)."""
        if order == 2:
            return self.unary("sqrt", self.sum(self.binary("mul", x, x), axes, keepdim))
        if order == 1:
            return self.sum(self.unary("abs", x), axes, keepdim)
        self.fail(f"a vector norm of order {order} (only 1 and 2)")

    # -- shapes ---------------------------------------------------------------------------------
    def reshape(self, x: Value, shape: tuple) -> Value:
        shape = tuple(Dim.of(d) for d in shape)
        if not x.plain:
            kept = _reshape_in_layout(x.source_shape, x.perm, shape)
            if kept is not None:  # the same bytes: a reshape of ours, no permute
                ours, perm = kept
                if tuple(x.shape) == ours:
                    return self.g.relabel(x, perm)
                return self.emit("reshape", [x], {"shape": shape_attr(ours, x.shape)}, perm=perm)
            gathered = _gathered_perm(x, shape)
            if gathered is not None:  # one permute, and the image stays channels-last
                return self.reshape(self.layout(x, gathered), shape)
        x = self.plain(x)
        if tuple(x.shape) == shape:
            return x
        return self.emit("reshape", [x], {"shape": shape_attr(shape, x.shape)})

    def flat(self, x: Value) -> Value:
        """x as one axis, in the source's order (torch ops given no dim)."""
        return self.reshape(x, (_prod(x.source_shape),))

    def permute(self, x: Value, dims) -> Value:
        """No node: the stored tensor is the same, seen through another permutation."""
        dims = tuple(d % x.rank for d in dims)
        inv = inverse_dims(dims)
        return self.g.relabel(x, tuple(inv[q] for q in x.perm))

    def transpose(self, x: Value, a: int, b: int) -> Value:
        dims = list(range(x.rank))
        a, b = a % x.rank, b % x.rank
        dims[a], dims[b] = dims[b], dims[a]
        return self.permute(x, dims)

    def concat(self, xs: list, axis: int) -> Value:
        xs, perm = self._aligned(xs)
        axis = perm.index(axis % xs[0].rank)
        return self.emit("concat", xs, {"axis": axis}, perm=perm)

    def split(self, x: Value, axis: int, sizes: list) -> list:
        if len(sizes) == 1:
            return [x]
        out = self.emit("split", [x], {"axis": self.our_axis(x, axis),
                                       "sizes": [int(s) for s in sizes]},
                        outputs=len(sizes), perm=x.perm)
        return out

    def slice(self, x: Value, axis: int, start, end, step: int = 1) -> Value:
        size = x.source_shape[axis % x.rank]
        whole = end is None or (Dim.of(end) == size if isinstance(end, str) else
                                size.is_static and end >= size.value)
        if start in (0, None) and step == 1 and whole:
            return x
        attrs = {"axis": self.our_axis(x, axis), "start": start if start is not None else 0,
                 "end": end, "step": step}
        return self.emit("slice", [x], _lean(attrs, {"start": 0, "end": None, "step": 1}),
                         perm=x.perm)

    def select(self, x: Value, axis: int, index: int) -> Value:
        axis %= x.rank
        part = self.slice(x, axis, index, index + 1 if index != -1 else None)
        shape = tuple(d for i, d in enumerate(part.source_shape) if i != axis)
        return self.squeeze_to(part, axis, shape)

    def squeeze_to(self, x: Value, axis: int, shape: tuple) -> Value:
        """Drops source axis `axis` (of size 1), keeping the layout of the others."""
        if x.plain:
            return self.reshape(x, shape)
        keep = [p for p in x.perm if p != axis]
        perm = tuple(p - (p > axis) for p in keep)
        ours = tuple(d for i, d in enumerate(x.shape) if x.perm[i] != axis)
        out = self.emit("reshape", [x], {"shape": shape_attr(ours, x.shape)}, perm=perm)
        return out

    def expand(self, x: Value, shape: tuple) -> Value:
        x = self.plain(x)
        shape = tuple(Dim.of(d) for d in shape)
        if tuple(x.shape) == shape:
            return x
        if x.rank < len(shape):
            x = self.reshape(x, (Dim.of(1),) * (len(shape) - x.rank) + tuple(x.shape))
        target = [-1 if d == x.shape[i] and not d.is_static else d for i, d in enumerate(shape)]
        if any(t != -1 and dim_attr(t) is None for t in target):
            return self._expand_products(x, shape)
        attrs = {"shape": [t if t == -1 else shape_attr((t,), (t,))[0] for t in target]}
        return self.emit("expand", [x], attrs)

    def _expand_products(self, x: Value, shape: tuple) -> Value:
        """An expand to a size that is a product of dims (DeBERTa's batch*heads): the size-1
        axis split into one axis per factor, expanded, then merged back."""
        split, factors = [], []
        for d, t in zip(x.shape, shape):
            parts = _factors(t) if dim_attr(t) is None and d != t else None
            if parts is None:
                split.append(d)
                factors.append(t)
            elif d == 1:
                split += [Dim.of(1)] * len(parts)
                factors += parts
            else:
                self.fail(f"expanding size {d} to {t}")
        grown = self.expand(self.reshape(x, tuple(split)), tuple(factors))
        return self.reshape(grown, shape)

    def repeat(self, x: Value, repeats: list) -> Value:
        """Tensor.repeat / ONNX Tile: each axis i tiled repeats[i] times (as many leading axes
        as repeats has more): a size-1 axis in front of each tiled one, expanded, merged."""
        repeats = [Dim.of(r) for r in repeats]
        x = self.plain(x)
        if len(repeats) > x.rank:
            x = self.reshape(x, (Dim.of(1),) * (len(repeats) - x.rank) + tuple(x.shape))
        split, grown, out = [], [], []
        for r, d in zip(repeats, x.shape):
            if r == 1 or d == 1:
                split.append(d)
                grown.append(r * d)
            else:
                split += [Dim.of(1), d]
                grown += [r, d]
            out.append(r * d)
        if all(r == 1 for r in repeats):
            return x
        tiled = self.expand(self.reshape(x, tuple(split)), tuple(grown))
        return self.reshape(tiled, tuple(out))

    def pad(self, x: Value, pads: list, value: float = 0.0) -> Value:
        """`pads`: (before, after) for each source axis."""
        if not any(b or a for b, a in pads):
            return x
        ours = []
        for axis in x.perm:
            ours += list(pads[axis])
        if any(p < 0 for p in ours):
            self.fail("negative padding (cropping) is not supported")
        return self.emit("pad", [x], {"pads": ours, **({"value": float(value)} if value else {})},
                         perm=x.perm)

    def cumsum(self, x: Value, axis: int, dtype: str, reverse=False, exclusive=False) -> Value:
        """Prefix sums by doubling: x plus itself shifted along `axis` by 1, 2, 4... until the
        shift reaches the axis's largest size. Pad, slice and add only, so integer sums are
        exact; log2(size) steps of elementwise work, for the short mask and position tensors
        models take cumulative sums of. `reverse` sums from the end; `exclusive` leaves each
        element out of its own sum (ONNX CumSum's attributes)."""
        axis %= x.rank
        x = self.cast(x, dtype)
        largest = x.source_shape[axis].eval({n: r[1] for n, r in self.g.dims.items()})

        def shifted(v: Value, by: int) -> Value:  # v moved `by` places along the sum, 0s in
            pads = [((0, by) if reverse else (by, 0)) if i == axis else (0, 0)
                    for i in range(v.rank)]
            padded = self.pad(v, pads)
            return self.slice(padded, axis, by, None) if reverse else \
                self.slice(padded, axis, 0, -by)
        shift = 1
        while shift < largest:
            x = self.binary("add", x, shifted(x, shift))
            shift *= 2
        return shifted(x, 1) if exclusive else x

    def roll(self, x: Value, shifts, dims) -> Value:
        return self.emit("roll", [x], {"shifts": [int(s) for s in shifts],
                                       "dims": [self.our_axis(x, d) for d in dims]}, perm=x.perm)

    def gather(self, data: Value, indices: Value, axis: int) -> Value:
        data = self.plain(data)
        return self.emit("gather", [data, self.plain(indices)], {"axis": axis % data.rank}
                         if axis % data.rank else {})

    def take(self, x: Value, axis: int, positions: list) -> Value:
        """x at the given positions along source `axis` (known at import time): a gather with
        a constant index table (torch.flip, a slice with a negative step)."""
        if positions == list(range(x.source_shape[axis % x.rank].value)):
            return x
        table = self.g.constant(np.array(positions, np.int64), self.path, "positions",
                                self.where)
        return self.gather(x, table, axis)

    def gather_elements(self, data: Value, indices: Value, axis: int) -> Value:
        """torch.gather / ONNX GatherElements: data cut to the indices' sizes outside `axis`
        (PyTorch lets them be smaller), then one element per index."""
        data, indices = self.plain(data), self.plain(indices)
        axis %= data.rank
        if indices.rank != data.rank:
            self.fail("gather with indices of another rank than the data")
        for d in range(data.rank):
            if d != axis and data.shape[d] != indices.shape[d]:
                end = dim_attr(indices.shape[d])
                if end is None:
                    self.fail(f"gather with indices of size {indices.shape[d]} on axis {d}")
                data = self.slice(data, d, 0, end)
        return self.emit("gather_elements", [data, indices], {"axis": axis} if axis else {})

    def embedding(self, ids: Value, weight: str, name: str | None) -> Value:
        table = self.g.weights[weight]
        return self.emit("embedding", [self.plain(ids)],
                         {"num_embeddings": int(table.shape[0]), "embedding_dim": int(table.shape[1])},
                         name=name, weights={"weight": weight})

    def attention(self, q: Value, k: Value, v: Value, mask, causal: bool, scale) -> Value:
        """softmax(q k^T * scale + mask) v with q, k, v [batch, heads, seq, head_dim] (source):
        our multi_head_attention reads [batch, seq, heads * head_dim], which is where the usual
        view + transpose of the heads came from, so the reshapes are free."""
        if q.rank != 4 or k.rank != 4 or v.rank != 4:
            self.fail("attention needs 4-d q, k, v ([batch, heads, seq, head_dim])")
        b, h, s, d = q.source_shape
        if not (h.is_static and d.is_static):
            self.fail("attention needs static heads and head_dim")
        if k.source_shape[1] != h:
            self.fail("attention with fewer key/value heads (GQA) is not supported")
        packed = []
        for t in (q, k, v):
            t = self.layout(t, (0, 2, 1, 3))  # [b, s, h, d]
            bb, ss, hh, dd = t.shape
            packed.append(self.emit("reshape", [t], {"shape": shape_attr(
                (bb, ss, hh * dd), t.shape)}, hint="heads"))
        inputs = packed
        if mask is not None:
            if mask.dtype == "bool":
                mask = self.where_(mask, 0.0, float("-inf"))
            mask = self.plain(self.cast(mask, q.dtype))
            if mask.rank < 4:
                mask = self.reshape(mask, (Dim.of(1),) * (4 - mask.rank) + tuple(mask.shape))
            inputs = inputs + [mask]
        attrs = {"num_heads": h.value, "head_dim": d.value}
        if scale is not None:
            attrs["scale"] = float(scale)
        if causal:
            attrs["causal"] = True
        out = self.emit("multi_head_attention", inputs, attrs, hint="attention")
        bb, ss, _ = out.shape
        heads = self.emit("reshape", [out], {"shape": shape_attr((bb, ss, h, d), out.shape)},
                          hint="split_heads")
        return self.g.relabel(heads, (0, 2, 1, 3))  # the source's [b, h, s, d]

    def iota(self, shape: tuple, dtype: str, start=0, step=1) -> Value:
        attrs = {"shape": [shape_attr((d,), (d,))[0] for d in shape], "dtype": dtype}
        if start:
            attrs["start"] = start
        if step != 1:
            attrs["step"] = step
        return self.emit("iota", [], attrs)

    def fill(self, shape: tuple, value, dtype: str) -> Value:
        attrs = {"shape": [shape_attr((d,), (d,))[0] for d in shape] or [1], "value": float(value)}
        if dtype != self.g.dtype:
            attrs["dtype"] = dtype
        return self.emit("constant", [], attrs, hint="constant")


COMPARE_OPS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
CONV_DEFAULTS = {"stride": 1, "padding": 0, "dilation": 1, "groups": 1, "bias": True}
RESIZE_DEFAULTS = {"mode": "nearest", "coordinates": "asymmetric", "rounding": "floor"}
POOL_DEFAULTS = {"stride": None, "padding": 0, "dilation": 1, "count_include_pad": True,
                 "ceil_mode": False}


def averaging_matrix(n: int, m: int) -> np.ndarray:
    """[n, m]: column i averages inputs [floor(i n / m), ceil((i + 1) n / m)) (adaptive pooling)."""
    out = np.zeros((n, m), np.float32)
    for i in range(m):
        start, end = i * n // m, -(-(i + 1) * n // m)
        out[start:end, i] = 1.0 / (end - start)
    return out


def promote(a: str, b: str) -> str:
    if a == b:
        return a
    for dtype in ("float32", "bfloat16", "float16"):
        if dtype in (a, b):
            return dtype
    return "int64" if "int64" in (a, b) else a


def _number(value, dtype: str):
    if dtype in FLOAT_DTYPES:
        return float(value)
    return int(value)


def _both(value) -> tuple:
    """(h, w) of an int or a list of one or two."""
    value = [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]
    return (value[0], value[-1])


def _pair(value):
    if isinstance(value, (list, tuple)):
        value = [int(v) for v in value]
        if len(value) == 1:
            return value[0]
        return value[0] if value[0] == value[1] else value
    return int(value)


def _lean(attrs: dict, defaults: dict) -> dict:
    """Attributes without those at their defaults: specs stay short."""
    return {k: v for k, v in attrs.items() if k not in defaults or defaults[k] != v}


def _reshape_in_layout(source: tuple, perm: tuple, shape: tuple):
    """(our shape, perm) of source reshape `shape` done on our stored tensor (source shape,
    stored as `perm`), or None.

    A reshape splits and merges runs of source axes. When each run that merges sits in our
    tensor in the same order and side by side, the result is a reshape of ours, laid out by
    the runs' order there (ConvNeXt/ViT's NHWC conv output viewed as [b, c, h*w]). Size-1 axes
    carry no bytes: a new one joins the run before it."""
    found = _reshape_runs(source, shape)
    if found is None:
        return None
    src, groups = found
    ours = [a for a in perm if a in src]  # our order of the source axes that hold bytes
    where = [[ours.index(a) for a in sa] for sa, _ in groups]
    if any(w != list(range(w[0], w[0] + len(w))) for w in where):
        return None  # a merged run is split up or reordered in ours
    order = sorted(range(len(groups)), key=lambda g: where[g][0])
    perm = tuple(a for g in order for a in groups[g][1])
    return tuple(shape[a] for a in perm), perm


def _gathered_perm(x: Value, shape: tuple):
    """For a reshape back to a 4-d image: our layout with each run of source axes that `shape`
    merges gathered side by side, in source order, where its last axis sits (the other axes keep
    their places), when the image then comes out channels-last. A channel shuffle (NHWC
    [b, h, w, 2, c] seen as source [b, c, 2, h, w], merged back to [b, 2c, h, w]) then costs one
    permute and stays NHWC, where the source layout would send every following conv through two
    more permutes."""
    found = _reshape_runs(x.source_shape, shape)
    if found is None or len(shape) != 4:
        return None
    _, groups = found
    order = list(x.perm)
    for sa, _ in groups:
        if len(sa) > 1:
            anchor = order[max(order.index(a) for a in sa)]
            rest = [a for a in order if a not in sa or a == anchor]
            at = rest.index(anchor)
            order = rest[:at] + list(sa) + rest[at + 1:]
    perm = tuple(order)
    kept = _reshape_in_layout(x.source_shape, perm, shape)
    if perm == x.perm or kept is None or kept[1] != NHWC:
        return None
    return perm


def _reshape_runs(source: tuple, shape: tuple):
    """(source axes that hold bytes, [(source axes, target axes)] runs) of a reshape, or None
    where its sizes do not split and merge whole runs."""
    src = [a for a in range(len(source)) if not source[a] == 1]
    tgt = [a for a in range(len(shape)) if not shape[a] == 1]
    if not src or not tgt:
        return None
    groups = []  # ([source axes], [target axes])
    i = j = 0
    while i < len(src) and j < len(tgt):
        sa, ta = [src[i]], [tgt[j]]
        ps, pt = source[src[i]], shape[tgt[j]]
        i, j = i + 1, j + 1
        while not ps == pt:
            if pt.exact_div(ps) is not None and i < len(src):
                ps = ps * source[src[i]]
                sa.append(src[i])
                i += 1
            elif ps.exact_div(pt) is not None and j < len(tgt):
                pt = pt * shape[tgt[j]]
                ta.append(tgt[j])
                j += 1
            else:
                return None
        groups.append((sa, ta))
    if i < len(src) or j < len(tgt):
        return None
    for a in range(len(shape)):  # size-1 target axes join the run of the axis before them
        if shape[a] == 1:
            before = [g for g in groups if g[1][0] < a]
            (before[-1] if before else groups[0])[1].append(a)
    for _, ta in groups:
        ta.sort()
    return src, groups


def _factors(d: Dim):
    """A product of dims and a number as its factors ([12, batch] for 12*batch); None for a
    sum."""
    if len(d.terms) != 1:
        return None
    names, coef = d.terms[0]
    return ([Dim.of(coef)] if coef != 1 else []) + [Dim.of(n) for n in names]


def max_dims(dims) -> Dim:
    """The broadcast size of an axis: the one that is not 1."""
    dims = list(dims)
    return next((d for d in dims if not d == 1), dims[0])


def _prod(dims) -> Dim:
    out = Dim.of(1)
    for d in dims:
        out = out * d
    return out

