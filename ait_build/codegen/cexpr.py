"""Symbolic sizes as C++ expressions, and the stride arithmetic kernels are called with.

Named dims become `d_<name>` (int64_t locals of the generated forward()). Shapes are collapsed
before they reach a kernel: adjacent axes that every operand walks contiguously merge into one,
so most kernels see rank 1 or 2 whatever the tensor rank.
"""

from __future__ import annotations

from ait_build.ir.dims import Dim, numel

INT32_MAX = 2**31 - 1


def dim_var(name: str) -> str:
    return f"d_{name}"


def cexpr(value) -> str:
    """A Dim (or int) as an int64 C++ expression."""
    dim = Dim.of(value)
    if dim.is_static:
        v = dim.value
        return f"{v}LL" if abs(v) > INT32_MAX else str(v)
    parts = []
    for mono, coeff in sorted(dim.terms, key=lambda t: (-len(t[0]), t[0])):
        factors = [dim_var(s) for s in mono]
        if abs(coeff) != 1 or not factors:
            factors.insert(0, str(abs(coeff)))
        sign = "-" if coeff < 0 else "+"
        parts.append((sign, "*".join(factors)))
    text = ("-" if parts[0][0] == "-" else "") + parts[0][1]
    for sign, term in parts[1:]:
        text += f" {sign} {term}"
    return f"({text})" if len(parts) > 1 else text


def contiguous_strides(shape) -> tuple:
    strides = []
    acc = Dim.of(1)
    for d in reversed(tuple(shape)):
        strides.append(acc)
        acc = acc * d
    return tuple(reversed(strides))


def broadcast_strides(shape, out_shape) -> tuple:
    """Strides of a contiguous `shape` read in `out_shape`'s coordinates (0 where it broadcasts)."""
    shape = tuple(shape)
    pad = len(out_shape) - len(shape)
    own = contiguous_strides(shape)
    out = []
    for i, d in enumerate(out_shape):
        j = i - pad
        if j < 0 or (shape[j] == 1 and d != 1):
            out.append(Dim.of(0))
        else:
            out.append(own[j])
    return tuple(out)


def collapse(sizes, *stride_lists) -> tuple:
    """Drops size-1 axes and merges neighbours that every stride list walks contiguously.
    Returns (sizes, [strides per list]); rank 0 comes back as rank 1 of size 1."""
    axes = [(Dim.of(s), [Dim.of(sl[i]) for sl in stride_lists]) for i, s in enumerate(sizes)]
    axes = [a for a in axes if a[0] != 1]
    merged: list = []
    for size, strides in axes:
        if merged:
            psize, pstrides = merged[-1]
            if all(ps == s * size for ps, s in zip(pstrides, strides)):
                merged[-1] = (psize * size, strides)
                continue
        merged.append((size, strides))
    if not merged:
        merged = [(Dim.of(1), [Dim.of(0) for _ in stride_lists])]
    return [m[0] for m in merged], [[m[1][k] for m in merged] for k in range(len(stride_lists))]


def elements(shape) -> Dim:
    return numel(tuple(shape))
