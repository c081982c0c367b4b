"""What an op is: one `OpDef` row holding its attribute schema, shape/dtype inference, its
parameters (weights) and its NumPy reference, and the helpers the rows share.

The category modules (elementwise.py, conv.py, ...) register their rows here; registry.py imports
them all and is where code looks ops up. Inference and reference functions are plain functions of
(attrs, inputs); shape problems raise `OpError` and the graph builder adds the spec location.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ait_build.errors import OpError
from ait_build.ir.dims import Dim, shape_str
from ait_build.ir.dtypes import FLOAT_DTYPES

REQUIRED = object()
ATTR_KINDS = ("int", "float", "bool", "str", "ints", "pair", "shape", "dtype", "dim",
              "dim_or_none", "number_or_none")


@dataclass(frozen=True)
class Attr:
    name: str
    kind: str
    default: Any = REQUIRED
    choices: tuple = ()
    doc: str = ""


@dataclass(frozen=True)
class TType:
    """A tensor's type: symbolic shape and dtype."""

    shape: tuple
    dtype: str

    def __str__(self):
        return f"{self.dtype}{shape_str(self.shape)}"


@dataclass(frozen=True)
class ParamSpec:
    """A weight an op owns: its shape and how random init fills it (see weights.py)."""

    shape: tuple
    init: str
    dtype: str = ""  # '' = the model dtype


@dataclass(frozen=True)
class OpDef:
    name: str
    category: str
    doc: str
    infer: Callable  # (attrs, [TType]) -> [TType]; with model_dtype: (attrs, [TType], dtype)
    reference: Callable  # (attrs, [ndarray], {role: ndarray}) -> [ndarray]
    attrs: tuple = ()
    inputs: tuple = ("x",)  # names; a trailing '?' marks optional, a leading '*' variadic
    params: Callable | None = None  # (attrs, [TType]) -> {role: ParamSpec}
    elementwise: bool = False
    internal: bool = False  # created by passes, not written in specs
    outputs: Callable | None = None  # (attrs) -> number of outputs, when not 1
    # for docs/ops.md: (role, shape formula) of each weight, and how the op differs from PyTorch
    weight_shapes: tuple = ()
    notes: str = ""
    model_dtype: bool = False  # infer takes the model's dtype (outputs that may be in it)
    # (attrs, [TType], dim name -> DimRange) -> None, raising OpError where some value of the dims
    # would make the kernel index outside its input (what infer cannot see: it has no ranges)
    check_ranges: Callable | None = None

    def infer_types(self, attrs: dict, inputs: list, dtype: str) -> list:
        """The output types for `inputs` in a model computing in `dtype` (the callers' way in)."""
        return self.infer(attrs, inputs, dtype) if self.model_dtype else self.infer(attrs, inputs)

    def input_range(self) -> tuple:
        if any(name.startswith("*") for name in self.inputs):
            return (sum(1 for n in self.inputs if not n.endswith("?") and not n.startswith("*")), None)
        required = sum(1 for n in self.inputs if not n.endswith("?"))
        return (required, len(self.inputs))

    def num_outputs(self, attrs: dict) -> int:
        return self.outputs(attrs) if self.outputs else 1

    def attr(self, name: str) -> Attr:
        for a in self.attrs:
            if a.name == name:
                return a
        raise KeyError(name)


OPS: dict = {}  # name -> OpDef, as the category modules register them (registry.py loads all)


def register(op: OpDef) -> OpDef:
    if op.name in OPS:
        raise ValueError(f"op '{op.name}' registered twice")
    OPS[op.name] = op
    return op


# -- shared helpers for rows ------------------------------------------------------------------

def norm_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise OpError(f"axis {axis} is out of range for a rank-{rank} tensor")
    return axis % rank


def pair(value) -> tuple:
    return (value, value) if isinstance(value, int) else tuple(value)


def broadcast_shapes(*shapes) -> tuple:
    """NumPy broadcasting over symbolic shapes; size-1 dims stretch, other dims must be equal."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = [s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0]
        result = Dim.of(1)
        for d in dims:
            if d == 1:
                continue
            if result == 1:
                result = d
            elif d != result:
                raise OpError("shapes " + " and ".join(shape_str(s) for s in shapes)
                              + " do not broadcast")
        out.append(result)
    return tuple(out)


def broadcasts_to(shape, target) -> bool:
    """Whether `shape` broadcasts to `target` without growing it (a residual, a mask)."""
    if len(shape) > len(target):
        return False
    try:
        return broadcast_shapes(target, shape) == tuple(target)
    except OpError:
        return False


def same_float_dtype(inputs) -> str:
    dtypes = {t.dtype for t in inputs}
    if len(dtypes) != 1:
        raise OpError("inputs have different dtypes: " + ", ".join(sorted(dtypes))
                      + " (insert a cast)")
    return dtypes.pop()


def require_rank(t: TType, rank: int, what: str) -> None:
    if len(t.shape) != rank:
        raise OpError(f"{what} must have rank {rank}, got {shape_str(t.shape)}")


def require_float(t: TType, what: str) -> None:
    if t.dtype not in FLOAT_DTYPES:
        raise OpError(f"{what} must be a float tensor, got {t.dtype} (insert a cast)")


def require_positive(attrs: dict, *names: str) -> None:
    for name in names:
        if attrs[name] < 1:
            raise OpError(f"'{name}' must be >= 1, got {attrs[name]}")


def require_static(d: Dim, what: str) -> int:
    if not d.is_static:
        raise OpError(f"{what} must be static, got '{d}'")
    return d.value

