"""What both importers take from the command line: inputs (`NAME:SHAPE[:DTYPE]`) and dim ranges
(`NAME=MIN:MAX[:OPT]`), checked into small frozen records."""

from __future__ import annotations

from dataclasses import dataclass

from ait_build.errors import AitError
from ait_build.ir.dims import Dim, DimRange
from ait_build.ir.dtypes import ALL_DTYPES
from ait_build.spec.model_fields import MAX_DIM
from ait_build.spec.names import IDENTIFIER

DEFAULT_MAX = 64  # a dim without --dim: 1..64


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple  # ints, dim names and Dims (a size expression: 320*frames + 80)
    dtype: str


def example_size(d: DimRange) -> int:
    """The size an export traces with: not 0 or 1, which exporters specialize on."""
    return max(2, min(d.opt, d.max)) if d.max >= 2 else d.max


def example_of(size, dims: dict) -> int:
    """The size an input axis is traced at: a dim's example, or an expression's at its dim's."""
    if isinstance(size, str):
        return example_size(dims[size])
    return size.eval({n: example_size(dims[n]) for n in size.symbols})


def parse_input(text: str) -> InputSpec:
    """`image:batch,3,224,224` or `ids:batch,seq:int64`."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[0] or not parts[1]:
        raise AitError(f"--input takes NAME:SHAPE[:DTYPE] (e.g. image:batch,3,224,224), got '{text}'")
    name, shape_text = parts[0], parts[1]
    dtype = parts[2] if len(parts) == 3 else "float32"
    if dtype not in ALL_DTYPES:
        raise AitError(f"--input {name}: unknown dtype '{dtype}' (one of {', '.join(ALL_DTYPES)})")
    shape = []
    for item in shape_text.split(","):
        item = item.strip()
        if item.isdigit() and 1 <= int(item) <= MAX_DIM:
            shape.append(int(item))
        elif item.isdigit():
            raise AitError(f"--input {name}: a size is 1 to {MAX_DIM}, got {item}")
        elif IDENTIFIER.fullmatch(item):
            shape.append(item)
        else:
            shape.append(_size_expression(name, item))
    return InputSpec(name, tuple(shape), dtype)


def _size_expression(name: str, item: str) -> Dim:
    """A size linear in one dim (`320*frames + 80`: an audio length the strides of a feature
    encoder divide), which torch.export takes as a derived dim."""
    try:
        size = Dim.parse(item)
    except ValueError:
        raise AitError(f"--input {name}: a size is a positive integer, a dim name or a*DIM + b, "
                       f"got '{item}'") from None
    (sym,) = size.symbols if len(size.symbols) == 1 else (None,)
    slope = None if sym is None else (size - size.eval({sym: 0})).exact_div(sym)
    if slope is None or not slope.is_static or slope.value < 1 or size.eval({sym: 0}) < 0:
        raise AitError(f"--input {name}: a size expression is a*DIM + b with a >= 1 and b >= 0 "
                       f"(320*frames + 80), got '{item}'")
    return size


def parse_dim(text: str) -> DimRange:
    """`batch=1:64`, `seq=1:512:128` or `batch=64` (1..64)."""
    name, eq, rng = text.partition("=")
    if not eq or not IDENTIFIER.fullmatch(name):
        raise AitError(f"--dim takes NAME=MIN:MAX[:OPT] (e.g. batch=1:64), got '{text}'")
    try:
        nums = [int(v) for v in rng.split(":")]
    except ValueError:
        raise AitError(f"--dim {name}: sizes must be integers, got '{rng}'") from None
    if len(nums) == 1:
        nums = [1] + nums
    if len(nums) not in (2, 3) or not 1 <= nums[0] <= nums[1]:
        raise AitError(f"--dim {name}: need 1 <= MIN <= MAX, got '{rng}'")
    opt = nums[2] if len(nums) == 3 else min(nums[1], 8)
    if not nums[0] <= opt <= nums[1]:
        raise AitError(f"--dim {name}: OPT {opt} is outside [{nums[0]}, {nums[1]}]")
    return DimRange(name, nums[0], nums[1], opt)


def unique(records: list, flag: str) -> list:
    """The --input or --dim records, each name given once."""
    seen = set()
    for r in records:
        if r.name in seen:
            raise AitError(f"{flag} {r.name} is given twice")
        seen.add(r.name)
    return records


def dims_for(inputs: list, given: list) -> dict:
    """name -> DimRange for every dim the inputs name (unnamed ones: 1..64, opt 8)."""
    dims = {d.name: d for d in given}
    used = [s for spec in inputs for s in spec.shape if isinstance(s, str)] + sorted(
        {n for spec in inputs for s in spec.shape if isinstance(s, Dim) for n in s.symbols})
    unknown = sorted(set(dims) - set(used))
    if unknown:
        raise AitError(f"--dim {unknown[0]}: no --input uses a dim of that name")
    for name in used:
        dims.setdefault(name, DimRange(name, 1, DEFAULT_MAX, 8))
    return dims
