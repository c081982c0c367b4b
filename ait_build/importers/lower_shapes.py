"""The shape half of Lower (lower.py): reshapes, permutes, slices, concats, pads, gathers and
the other moves of the source's tensors, in the source's axes. A reshape of a tensor held in
another layout (NHWC where the source thinks NCHW) keeps that layout where the reshape only
regroups whole runs of its axes, so a view costs no transposes."""

from __future__ import annotations

import numpy as np

from ait_build.errors import AitError
from ait_build.importers.graph import NHWC, Value, dim_attr, shape_attr
from ait_build.ir.dims import Dim, numel
from ait_build.ops.opdef import norm_axis
from ait_build.passes.rewrite import inverse_dims


class ShapeLowering:
    """Methods of Lower (it supplies emit, layout, plain, fail, our_axis and the graph `g`)."""

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
        return self.reshape(x, (numel(x.source_shape),))

    def permute(self, x: Value, dims) -> Value:
        """No node: the stored tensor is the same, seen through another permutation."""
        dims = tuple(norm_axis(d, x.rank) for d in dims)
        if sorted(dims) != list(range(x.rank)):
            raise AitError(f"a permutation of {x.rank} axes, got {list(dims)}")
        inv = inverse_dims(dims)
        return self.g.relabel(x, tuple(inv[q] for q in x.perm))

    def transpose(self, x: Value, a: int, b: int) -> Value:
        dims = list(range(x.rank))
        a, b = norm_axis(a, x.rank), norm_axis(b, x.rank)
        dims[a], dims[b] = dims[b], dims[a]
        return self.permute(x, dims)

    def concat(self, xs: list, axis: int) -> Value:
        xs, perm = self._aligned(xs)
        axis = perm.index(norm_axis(axis, xs[0].rank))
        return self.emit("concat", xs, {"axis": axis}, perm=perm)

    def split(self, x: Value, axis: int, sizes: list) -> list:
        if len(sizes) == 1:
            return [x]
        out = self.emit("split", [x], {"axis": self.our_axis(x, axis),
                                       "sizes": [int(s) for s in sizes]},
                        outputs=len(sizes), perm=x.perm)
        return out

    def slice(self, x: Value, axis: int, start, end, step: int = 1) -> Value:
        size = x.source_shape[norm_axis(axis, x.rank)]
        whole = end is None or (Dim.of(end) == size if isinstance(end, str) else
                                size.is_static and end >= size.value)
        if start in (0, None) and step == 1 and whole:
            return x
        attrs = {"axis": self.our_axis(x, axis), "start": start if start is not None else 0,
                 "end": end, "step": step}
        return self.emit("slice", [x], lean(attrs, {"start": 0, "end": None, "step": 1}),
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

    def as_row_image(self, x: Value, image_op) -> Value:
        """A 1-d op over x's last axis ([N, C, L] pools and resizes) as its 2-d form: image_op of
        x viewed as [N, C, 1, L], viewed back with the result's length."""
        shape = tuple(x.source_shape)
        out = image_op(self.reshape(x, shape[:-1] + (Dim.of(1), shape[-1])))
        return self.reshape(out, shape[:-1] + (out.source_shape[-1],))

    def pad_edges(self, x: Value, pads: list, mode: str) -> Value:
        """`pads` ((before, after) per source axis) filled from x itself: `reflect` mirrors it
        without repeating the edge, `replicate` repeats the edge, `circular` wraps around. One
        gather of known positions per padded axis (its size must be static)."""
        for axis, (before, after) in enumerate(pads):
            if not (before or after):
                continue
            size = x.source_shape[axis]
            if not size.is_static:
                self.fail(f"{mode} padding of an axis of size {size} (a static size is needed)")
            n = size.value
            if min(before, after) < 0 or mode == "reflect" and max(before, after) >= n:
                self.fail(f"{mode} padding ({before}, {after}) of an axis of size {n}")
            if mode == "reflect":
                positions = list(range(before, 0, -1)) + list(range(n)) + \
                    list(range(n - 2, n - 2 - after, -1))
            elif mode == "replicate":
                positions = [0] * before + list(range(n)) + [n - 1] * after
            elif mode == "circular":
                positions = [i % n for i in range(-before, n + after)]
            else:
                self.fail(f"padding mode '{mode}'")
            x = self.take(x, axis, positions)
        return x

    def cumsum(self, x: Value, axis: int, dtype: str, reverse=False, exclusive=False) -> Value:
        """Running sums in `dtype` (our cumsum op: one kernel, float types summed in float32):
        the mask and position tensors models take cumulative sums of, a router's counts.
        `reverse` sums from the end; `exclusive` leaves each element out of its own sum (ONNX
        CumSum's attributes)."""
        x = self.cast(x, dtype)
        attrs = {"axis": self.our_axis(x, axis)}
        attrs.update({k: True for k, on in (("exclusive", exclusive), ("reverse", reverse)) if on})
        return self.emit("cumsum", [x], attrs, perm=x.perm)

    def scan(self, x: Value, axis: int, op: str = "add", reverse=False) -> Value:
        """x[0] op x[1] op ... op x[i] at each i along `axis` (from the end with `reverse`) by
        doubling: x op itself shifted by 1, 2, 4... places until the shift reaches the axis's
        largest size, log2(size) elementwise steps (cumprod, cummax, cummin). Sums and
        products shift in 0s and 1s; the running max and min shift in copies of the end
        element (already in every prefix, and no infinity to write) over a static size, else
        the dtype's most negative (positive) finite value."""
        axis %= x.rank
        largest = self.largest(x.source_shape[axis])
        fill = {"add": 0.0, "mul": 1.0}.get(op)
        if fill is None and not x.source_shape[axis].is_static:
            fill = _extreme_finite(x.dtype, lowest=op == "maximum")
        shift = 1
        while shift < largest:
            x = self.binary(op, x, self._shifted(x, axis, shift, reverse, fill))
            shift *= 2
        return x

    def _shifted(self, v: Value, axis: int, by: int, reverse: bool, fill) -> Value:
        """v moved `by` places along `axis` (towards the end, or the start with `reverse`), the
        places left filled with `fill`, or with the end element where `fill` is None."""
        if fill is None:
            n = v.source_shape[axis]
            if not n.is_static:
                self.fail(f"a running max or min along {n} elements (only a static size)")
            n = n.value
            positions = [min(i + by, n - 1) for i in range(n)] if reverse else \
                [max(i - by, 0) for i in range(n)]
            return self.take(v, axis, positions)
        pads = [((0, by) if reverse else (by, 0)) if i == axis else (0, 0) for i in range(v.rank)]
        padded = self.pad(v, pads, fill)
        return self.slice(padded, axis, by, None) if reverse else self.slice(padded, axis, 0, -by)

    def roll(self, x: Value, shifts, dims) -> Value:
        return self.emit("roll", [x], {"shifts": [int(s) for s in shifts],
                                       "dims": [self.our_axis(x, d) for d in dims]}, perm=x.perm)

    def gather(self, data: Value, indices: Value, axis: int) -> Value:
        data = self.plain(data)
        return self.emit("gather", [data, self.plain(indices)], {"axis": axis % data.rank}
                         if axis % data.rank else {})

    def flat_index(self, indices: list, sizes: list) -> Value:
        """One int64 position over axes of `sizes` merged (row-major) from an index on each:
        i0 * size1 + i1 ..., each index taken modulo its axis (a negative one counts from the
        end); sizes may follow dims (a run-time value then)."""
        flat = None
        for index, size in zip(indices, sizes):
            extent = size.value if size.is_static else self.size_value(size, "int64")
            index = self.remainder(self.cast(index, "int64"), extent)
            flat = index if flat is None else self.binary(
                "add", self.binary("mul", flat, extent), index)
        return flat

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

    def permute_elements(self, src: Value, index: Value, axis: int) -> Value:
        """out[..., index[..., i, ...], ...] = src[..., i, ...] along `axis`, for an index that
        is a permutation there (a sort's places: ordering.counted_places)."""
        src, index = self.plain(src), self.plain(index)
        axis %= src.rank
        return self.emit("permute_elements", [src, index], {"axis": axis} if axis else {})

    def embedding(self, ids: Value, weight: str, name: str | None) -> Value:
        table = self.g.weights[weight]
        return self.emit("embedding", [self.plain(ids)],
                         {"num_embeddings": int(table.shape[0]), "embedding_dim": int(table.shape[1])},
                         name=name, weights={"weight": weight})

    def attention(self, q: Value, k: Value, v: Value, mask, causal: bool, scale) -> Value:
        """softmax(q k^T * scale + mask) v over q, k, v [..., seq, head_dim], every axis before
        the last two a batch axis (PyTorch's rule). Another rank than 4 folds to the 4-d form:
        3-d [batch, seq, head_dim] gets one head; 5-d and more (NesT's [batch, heads, blocks,
        seq, head_dim]) keep their last batch axis as the heads and merge the others into the
        batch, and the mask follows."""
        if not q.rank == k.rank == v.rank or q.rank < 3:
            self.fail(f"attention over q, k, v of ranks {q.rank}, {k.rank}, {v.rank} (each "
                      "[..., seq, head_dim], of one rank, at least 3)")
        if q.rank == 4:
            return self._attention_4d(q, k, v, mask, causal, scale)
        lead = tuple(q.source_shape[:-2])
        if any(tuple(t.source_shape[:-2]) != lead for t in (k, v)):
            self.fail("attention whose q, k and v batch axes differ (broadcast k or v)")
        folded = (numel(lead[:-1]), lead[-1]) if q.rank > 4 else (lead[0], Dim.of(1))
        q4, k4, v4 = (self.reshape(t, folded + tuple(t.source_shape[-2:])) for t in (q, k, v))
        if mask is not None:
            mask = self._folded_mask(mask, lead)
        out = self._attention_4d(q4, k4, v4, mask, causal, scale)
        return self.reshape(out, lead + tuple(out.source_shape[-2:]))

    def _folded_mask(self, mask: Value, lead: tuple) -> Value:
        """The mask [..., seq_q, seq_k] of an attention over batch axes `lead`, for its folded
        4-d form: its axes before the heads merge where they span those of q or none of them,
        else it is expanded to them first."""
        rank = len(lead) + 2
        if mask.rank > rank:
            self.fail(f"an attention mask of rank {mask.rank} over q of rank {rank}")
        shape = (Dim.of(1),) * (rank - mask.rank) + tuple(mask.source_shape)
        if rank == 3:
            return self.reshape(mask, (shape[0], Dim.of(1)) + shape[1:])
        merged, rest = shape[:-3], shape[-3:]
        if any(d != 1 for d in merged) and merged != lead[:-1]:
            mask, merged = self.expand(mask, lead[:-1] + rest), lead[:-1]
        return self.reshape(mask, (numel(merged),) + rest)

    def _attention_4d(self, q: Value, k: Value, v: Value, mask, causal: bool, scale) -> Value:
        """softmax(q k^T * scale + mask) v with q, k, v [batch, heads, seq, head_dim] (source):
        our multi_head_attention reads [batch, seq, heads * head_dim], which is where the usual
        view + transpose of the heads came from, so the reshapes are free."""
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
        if len(shape) == 1 and dim_attr(Dim.of(shape[0])) is None:
            return self._flat_iota(Dim.of(shape[0]), dtype, start, step)
        attrs = {"shape": [shape_attr((d,), (d,))[0] for d in shape], "dtype": dtype}
        if start:
            attrs["start"] = start
        if step != 1:
            attrs["step"] = step
        return self.emit("iota", [], attrs)

    def _flat_iota(self, size: Dim, dtype: str, start, step) -> Value:
        """start, start + step, ... over a product of dims (k*dim, batch*seq: an iota's shape
        holds dim names, not products): the row-major index of a [k, batch, seq] grid, flat."""
        if len(size.terms) != 1:
            self.fail(f"positions over {size} (a product of dims is taken)")
        names, k = size.terms[0]
        grid = ([k] if k != 1 else []) + list(names)
        total = stride = None
        for axis in reversed(range(len(grid))):
            part = self.emit("iota", [], {"shape": grid, "axis": axis, "step": step,
                                          "dtype": dtype})
            total = part if stride is None else self.binary(
                "add", total, self.binary("mul", part, stride))
            extent = self.size_value(Dim.of(grid[axis]), dtype)
            stride = extent if stride is None else self.binary("mul", stride, extent)
        flat = self.reshape(total, (size,))
        return self.binary("add", flat, start) if start else flat

    def largest(self, size: Dim) -> int:
        """`size` at the largest values the --dim ranges allow."""
        return size.eval({n: r[1] for n, r in self.g.dims.items()})

    def size_value(self, size: Dim, dtype: str) -> Value:
        """A one-element tensor holding `size` at run time: linear in one dim (a*dim + b), the
        last element of the iota b + a, b + 2a, ... over the dim; otherwise a sum of products
        of such (batch*seq)."""
        if size.is_static:
            return self.number(size.value, dtype)
        (name, *more) = size.symbols
        if not more:
            b = size.eval({name: 0})
            a = size.eval({name: 1}) - b
            if size.eval({name: 2}) == b + 2 * a:
                return self.slice(self.iota((Dim.of(name),), dtype, b + a, a), 0, -1, None)
        # products of dims (batch*seq tokens): each term a product of its dims' values
        total = None
        for names, coeff in size.terms:
            term = self.number(coeff, dtype)
            for n in names:
                term = self.binary("mul", term, self.size_value(Dim.of(n), dtype))
            total = term if total is None else self.binary("add", total, term)
        return total

    def fill(self, shape: tuple, value, dtype: str) -> Value:
        shape = tuple(Dim.of(d) for d in shape)
        if any(dim_attr(d) is None for d in shape):
            # a size that is a product of dims (an LSTM's zero state over batch*rows): a
            # constant of size 1 there, expanded
            small = tuple(d if dim_attr(d) is not None else Dim.of(1) for d in shape)
            return self.expand(self.fill(small, value, dtype), shape)
        attrs = {"shape": [shape_attr((d,), (d,))[0] for d in shape] or [1], "value": float(value)}
        if dtype != self.g.dtype:
            attrs["dtype"] = dtype
        return self.emit("constant", [], attrs, hint="constant")


def _extreme_finite(dtype: str, lowest: bool) -> float:
    """The most negative (lowest) or most positive finite value of float32 (a float16 or
    bfloat16 tensor reads it as its infinity, as harmless in a max) or of an integer dtype."""
    value = {"int32": 2.0 ** 31 - 1, "int64": 2.0 ** 63 - 1024}.get(dtype, 3.4028234663852886e38)
    return -value if lowest else value


def lean(attrs: dict, defaults: dict) -> dict:
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
