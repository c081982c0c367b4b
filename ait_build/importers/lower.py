"""Source-model operations in the source's own terms (NCHW, PyTorch/ONNX axes and shapes),
written as our ops: both importers call these, so layouts, casts and scalars are handled once.

`path` and `where` name the source module and location of the node being translated; the
frontend sets them before each node.
"""

from __future__ import annotations

import numpy as np

from ait_build.errors import AitError
from ait_build.importers.graph import NHWC, ImportGraph, Value, identity, shape_attr
from ait_build.importers.lower_shapes import ShapeLowering, lean
from ait_build.ir.dims import Dim, numel
from ait_build.ir.dtypes import FLOAT_DTYPES
from ait_build.ops.conv import out_count
from ait_build.ops.opdef import norm_axis
from ait_build.ops.resize import CUBIC_COEFF


class Lower(ShapeLowering):
    """Our ops for the source's: the elementwise, GEMM-shaped and row/window ones here, the
    shape moves in lower_shapes.py."""

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
        return value.perm.index(norm_axis(axis, value.rank))

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

    def truth(self, value):
        """A logical op's operand as bool: any nonzero number is true, as torch.logical_* and
        torch.logical_xor read it (LongT5 ands int64 attention masks); bools and numbers as
        they are."""
        if isinstance(value, Value) and value.dtype != "bool":
            return self.binary("not_equal", value, 0)
        return value

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

    def divide(self, a, b, rounding: str, dtype: str | None = None) -> Value:
        """a / b rounded down (`floor`: Python's //) or toward zero (`trunc`: C's, ONNX Div of
        ints): toward zero is one more than down where the division is inexact and the signs
        differ."""
        q = self.binary("floor_divide", a, b, dtype)
        if rounding == "floor":
            return q
        r = self.binary("remainder", a, b, dtype)
        return self.binary("add", q, self._c_correction(a, b, r))

    def remainder(self, a, b, c_style: bool = False, dtype: str | None = None) -> Value:
        """a - floor(a / b) * b (Python's %, the sign of b), or with `c_style` C's fmod (the
        sign of a): b less than Python's where the two differ."""
        r = self.binary("remainder", a, b, dtype)
        if not c_style:
            return r
        return self.binary("sub", r, self.binary("mul", self._c_correction(a, b, r), b))

    def _c_correction(self, a, b, r: Value) -> Value:
        """1 where a / b is inexact (its Python remainder `r` is not 0) and a and b have other
        signs, else 0, in r's dtype (a or b may be a number)."""
        inexact = self.binary("not_equal", r, 0)
        signs = [v < 0 if not isinstance(v, Value) else self.binary("less", v, 0) for v in (a, b)]
        tensors = [v for v in signs if isinstance(v, Value)]
        if len(tensors) == 2:
            differ = self.binary("not_equal", self.cast(signs[0], "int32"),
                                 self.cast(signs[1], "int32"))
        else:
            fixed = [v for v in signs if not isinstance(v, Value)][0]
            differ = self.unary("logical_not", tensors[0]) if fixed else tensors[0]
        return self.cast(self.binary("logical_and", inexact, differ), r.dtype)

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
        if exponent == 4:
            square = self.power(x, 2)
            return self.emit("mul", [square, square], perm=x.perm, hint="fourth")
        if exponent in (-1, -2, -0.5):
            return self.binary("div", 1.0, self.power(x, -exponent))
        if x.dtype not in FLOAT_DTYPES:
            self.fail(f"x ** {exponent} of an integer tensor (the exponents 1, 2, 3 and 4)")
        # exp(y log x): 0 at x = 0 for y > 0, NaN below 0 where y is not an integer (as PyTorch)
        if float(exponent).is_integer():
            self.fail(f"x ** {exponent}: integer exponents -2 to 4 (an odd one beyond needs the "
                      "sign of x)")
        return self.unary("exp", self.binary("mul", self.unary("log", x), float(exponent)))

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
        return self.emit("conv2d", [x], lean(attrs, CONV_DEFAULTS), hint="conv", name=name,
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
        return self.emit("linear", [x], lean(attrs, {"bias": True}), hint="linear", name=name,
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

    def grouped_matmul(self, a: Value, b: Value, offsets: Value) -> Value:
        """Rows offsets[g-1]..offsets[g] of a [S, K] times b[g] ([G, K, N]; a transposed view
        of [G, N, K] weights is read as it lies)."""
        attrs = {}
        if b.rank == 3 and b.perm == (0, 2, 1):
            attrs["transpose_b"] = True
        else:
            b = self.plain(b)
        return self.emit("grouped_matmul", [self.plain(a), b, self.plain(offsets)], attrs)

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
        return self.emit(op, [x], lean(attrs, POOL_DEFAULTS), perm=NHWC)

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

    def resize(self, x: Value, size, mode: str, coordinates: str, rounding: str = "floor",
               cubic_coeff: float = CUBIC_COEFF):
        """An NCHW image resampled to `size` ([height, width]): resize2d, NHWC."""
        if x.rank != 4:
            self.fail(f"resizing a {x.rank}-d tensor: only images ([N, C, H, W])")
        x = self.layout(x, NHWC)
        attrs = {"size": _pair(size), "mode": mode, "coordinates": coordinates,
                 "rounding": rounding, "cubic_coeff": float(cubic_coeff)}
        return self.emit("resize2d", [x], lean(attrs, RESIZE_DEFAULTS), perm=NHWC)

    def mean(self, x: Value, axes, keepdim: bool) -> Value:
        """The mean over source `axes`: global_avg_pool, after a reshape when the axes are not
        an image's H and W."""
        axes = sorted(norm_axis(a, x.rank) for a in axes)
        if x.rank == 4 and axes == [2, 3]:
            return self.emit("global_avg_pool", [self.layout(x, NHWC)],
                             {"keepdims": True} if keepdim else {},
                             perm=NHWC if keepdim else identity(2))
        if x.rank > 2 and x.perm == self.channels_last(x) and axes == list(range(2, x.rank)):
            # channels-last frames or sequences ([N, T, H, W, C]): every position one row
            n, c = x.shape[0], x.shape[-1]
            grid = self.emit("reshape", [x], {"shape": shape_attr(
                (n, numel(x.shape[1:-1]), Dim.of(1), c), x.shape)}, hint="rows")
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
        outer, inner = numel(shape[:axes[0]]), numel(shape[axes[-1] + 1:])
        count = numel(shape[axes[0]:axes[-1] + 1])
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
        axes = sorted(norm_axis(a, x.rank) for a in axes)
        if len(axes) == 1 and not x.source_shape[axes[0]].is_static:
            # a size only the run knows (GPT-OSS's scores and sink column): a running max along
            # the axis as it lies, its last element
            top = self.slice(self.scan(x, axes[0], "maximum"), axes[0], -1, None)
            return top if keepdim else self.reshape(top, tuple(
                d for i, d in enumerate(x.source_shape) if i != axes[0]) or (Dim.of(1),))
        if x.rank == 4 and axes == [2, 3] and all(d.is_static for d in x.source_shape[2:]):
            window = [d.value for d in x.source_shape[2:]]
            pooled = self.pool("max_pool2d", x, window, window, 0)
            return pooled if keepdim else self.reshape(pooled, tuple(x.source_shape[:2]))
        def window(grid, count):  # one max_pool2d window over the whole count
            if not count.is_static:  # a count only the run knows: a running max, its last
                return self.slice(self.scan(grid, 1, "maximum"), 1, -1, None)
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
        """The sum over source `axes`: their mean times how many elements it averages. Integers
        (a mask's count of valid positions) are summed in float32 and cast back: exact while
        the sum stays below 2^24."""
        axes = [norm_axis(a, x.rank) for a in axes]
        count = numel(x.source_shape[a] for a in axes)
        if x.dtype not in FLOAT_DTYPES:
            total = self.sum(self.cast(x, "float32"), axes, keepdim)
            return self.cast(self.unary("round", total), x.dtype)
        if not count.is_static:  # the count at run time (a sum over the batch, batch*seq tokens)
            return self.binary("mul", self.mean(x, axes, keepdim),
                               self.size_value(count, x.dtype))
        return self.binary("mul", self.mean(x, axes, keepdim), float(count.value))

    def vector_norm(self, x: Value, order, axes, keepdim: bool) -> Value:
        """torch.linalg.vector_norm / ONNX ReduceL1, ReduceL2 over source `axes` (Swin V2's
        cosine attention, ConvNeXt V2's global response norm)."""
        if order == 2:
            return self.unary("sqrt", self.sum(self.binary("mul", x, x), axes, keepdim))
        if order == 1:
            return self.sum(self.unary("abs", x), axes, keepdim)
        self.fail(f"a vector norm of order {order} (only 1 and 2)")

COMPARE_OPS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
CONV_DEFAULTS = {"stride": 1, "padding": 0, "dilation": 1, "groups": 1, "bias": True}
RESIZE_DEFAULTS = {"mode": "nearest", "coordinates": "asymmetric", "rounding": "floor",
                   "cubic_coeff": CUBIC_COEFF}
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


def max_dims(dims) -> Dim:
    """The broadcast size of an axis: the one that is not 1."""
    dims = list(dims)
    return next((d for d in dims if not d == 1), dims[0])

