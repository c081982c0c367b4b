"""Symbolic dimensions: integer polynomials over named dims (batch, seq, ...).

A shape entry is a `Dim`. Static dims are constant polynomials; `batch*seq` (from a reshape)
and `2*batch` (from a concat) stay exact, so shape inference never guesses. Every named dim has a
range (`DimRange`); with non-negative coefficients a Dim is monotonic, so its bounds are its value
at the range ends.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Mapping

Monomial = tuple  # sorted tuple of symbol names, with repeats for powers


class Dim:
    """An immutable polynomial with integer coefficients over dim names."""

    __slots__ = ("terms",)

    def __init__(self, terms: Mapping[Monomial, int] | None = None):
        clean = {m: c for m, c in (terms or {}).items() if c != 0}
        object.__setattr__(self, "terms", tuple(sorted(clean.items())))

    @staticmethod
    def of(value: "Dim | int | str") -> "Dim":
        if isinstance(value, Dim):
            return value
        if isinstance(value, bool):
            raise TypeError("a dim cannot be a bool")
        if isinstance(value, int):
            return Dim({(): value})
        if isinstance(value, str):
            return Dim({(value,): 1})
        raise TypeError(f"cannot make a dim from {value!r}")

    # -- queries -------------------------------------------------------------------------------
    @property
    def is_static(self) -> bool:
        return all(m == () for m, _ in self.terms)

    @property
    def value(self) -> int:
        """The constant value; raises if the dim is symbolic."""
        if not self.is_static:
            raise ValueError(f"dim '{self}' is symbolic")
        return self.terms[0][1] if self.terms else 0

    @property
    def static_value(self) -> int | None:
        """The constant value, or None where the dim is symbolic."""
        return self.value if self.is_static else None

    @property
    def may_be_negative(self) -> bool:
        """Whether some dim values make it negative: a term with a negative coefficient (dims
        are >= 1, so without one it is not; with one it may still never be, `seq*seq - seq`)."""
        return any(c < 0 for _, c in self.terms)

    @property
    def symbols(self) -> frozenset:
        return frozenset(s for m, _ in self.terms for s in m)

    def eval(self, bindings: Mapping[str, int]) -> int:
        total = 0
        for mono, coeff in self.terms:
            term = coeff
            for sym in mono:
                term *= bindings[sym]
            total += term
        return total

    # -- arithmetic ----------------------------------------------------------------------------
    def __add__(self, other):
        other = Dim.of(other)
        terms = dict(self.terms)
        for m, c in other.terms:
            terms[m] = terms.get(m, 0) + c
        return Dim(terms)

    __radd__ = __add__

    def __neg__(self):
        return Dim({m: -c for m, c in self.terms})

    def __sub__(self, other):
        return self + (-Dim.of(other))

    def __rsub__(self, other):
        return Dim.of(other) - self

    def __mul__(self, other):
        other = Dim.of(other)
        terms: dict = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return Dim(terms)

    __rmul__ = __mul__

    def exact_div(self, other) -> "Dim | None":
        """self / other when it divides exactly (by an int or a single-term dim), else None."""
        other = Dim.of(other)
        if len(other.terms) != 1:
            return Dim.of(1) if other == self else None
        (div_mono, div_coeff), = other.terms
        if div_coeff == 0:
            return None
        out: dict = {}
        for mono, coeff in self.terms:
            rest = list(mono)
            for sym in div_mono:
                if sym not in rest:
                    return None
                rest.remove(sym)
            if coeff % div_coeff:
                return None
            out[tuple(rest)] = coeff // div_coeff
        return Dim(out)

    def floor_div(self, step: int) -> "Dim | None":
        """floor(self / step) at every value of the dims, where each dim term divides by `step`
        (the constant need not): (320*frames + 69) // 5 is 64*frames + 13. Else None: a floor
        division is not a polynomial (seq // 2)."""
        const = Dim({m: c for m, c in self.terms if m == ()})
        rest = (self - const).exact_div(step)
        return None if rest is None or step < 1 else rest + const.value // step

    @staticmethod
    def parse(text: str, names=None) -> "Dim":
        """A size written as an expression of dim names and integers with +, - and *
        (`320*frames + 80`); a name outside `names` (when given) or anything else raises
        ValueError."""
        if len(text) > 200:
            raise ValueError("a dim expression longer than 200 characters")
        try:
            tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            raise ValueError(f"'{text}' is not a dim expression (dim names and integers with "
                             "+, - and *)") from None

        def build(node) -> Dim:
            if isinstance(node, ast.Constant) and type(node.value) is int:
                return Dim.of(node.value)
            if isinstance(node, ast.Name):
                if names is not None and node.id not in names:
                    raise ValueError(f"unknown dim '{node.id}' in '{text}'")
                return Dim.of(node.id)
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
                return -build(node.operand)
            if isinstance(node, ast.BinOp) and type(node.op) in _DIM_OPS:
                return _DIM_OPS[type(node.op)](build(node.left), build(node.right))
            raise ValueError(f"'{text}' is not a dim expression (dim names and integers with "
                             "+, - and *)")
        return build(tree)

    # -- identity ------------------------------------------------------------------------------
    def __eq__(self, other):
        if isinstance(other, (int, str)) and not isinstance(other, bool):
            other = Dim.of(other)
        return isinstance(other, Dim) and self.terms == other.terms

    def __hash__(self):
        return hash(self.terms)

    def __repr__(self):
        return f"Dim({self})"

    def __str__(self):
        if not self.terms:
            return "0"
        parts = []
        for mono, coeff in sorted(self.terms, key=lambda t: (-len(t[0]), t[0])):
            names = "*".join(mono)
            if not mono:
                parts.append(str(coeff))
            elif coeff == 1:
                parts.append(names)
            else:
                parts.append(f"{coeff}*{names}")
        return " + ".join(parts).replace("+ -", "- ")

    def to_json(self):
        return self.value if self.is_static else str(self)


_DIM_OPS = {ast.Add: Dim.__add__, ast.Sub: Dim.__sub__, ast.Mult: Dim.__mul__}


def shape_str(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def numel(shape) -> Dim:
    total = Dim.of(1)
    for d in shape:
        total = total * d
    return total


@dataclass(frozen=True)
class DimRange:
    """A named dim's allowed values; `opt` is the size kernels are tuned for."""

    name: str
    min: int
    max: int
    opt: int

    def contains(self, value: int) -> bool:
        return self.min <= value <= self.max


def bounds(dim: Dim, ranges: Mapping[str, DimRange]) -> tuple[int, int]:
    """(smallest, largest) value of `dim` over the ranges (dims have non-negative coefficients)."""
    lo = dim.eval({n: r.min for n, r in ranges.items()})
    hi = dim.eval({n: r.max for n, r in ranges.items()})
    return min(lo, hi), max(lo, hi)
