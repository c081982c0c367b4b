"""Where each tensor lives in the generated forward(): a user buffer, a weight, a workspace slot,
or a view of another tensor.

With the optimizer's memory plan (graph.memory_plan), planned tensors sit at its constant offsets
in one workspace sized at the max dims. Without one, every tensor gets its own slot and the
offsets are computed at run time from the actual dims, so an unplanned model still runs in memory
proportional to the batch it is given. Tensors the plan does not cover (float16 staging buffers,
copies) are appended after the planned region.
"""

from __future__ import annotations

from dataclasses import dataclass

from ait_build.codegen.cexpr import cexpr
from ait_build.ir.dims import Dim

ALIGN = 64

# storage types: floats are computed and stored as float32 inside the library
CTYPE = {"float32": "float", "float16": "float", "bfloat16": "float", "int32": "int32_t",
         "int64": "int64_t", "bool": "uint8_t"}
# types of the user's input/output buffers (the model dtype for floats)
IO_CTYPE = {"float32": "float", "float16": "uint16_t", "bfloat16": "uint16_t", "int32": "int32_t",
            "int64": "int64_t", "bool": "uint8_t"}
SIZEOF = {"float": 4, "int32_t": 4, "int64_t": 8, "uint8_t": 1, "uint16_t": 2}


def align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class Value:
    """A tensor's pointer in forward(): `<ctype>* const <var> = <init>;`."""

    tensor: str
    var: str
    ctype: str
    init: str
    const: bool = False
    kind: str = "work"  # input | output | work | view | weight
    base: str = ""  # the tensor whose storage a view shares


@dataclass
class Slot:
    index: int
    tensor: str
    nbytes: Dim  # at the actual dims
    offset: int | None  # constant (planned) offset, or None for run-time layout


def read_memory_plan(plan) -> tuple | None:
    """(offsets, sizes) dicts in bytes from graph.memory_plan (an object or a dict), or None."""
    if plan is None:
        return None

    def field(name):
        return plan.get(name) if isinstance(plan, dict) else getattr(plan, name, None)

    offsets, sizes = field("offsets"), field("sizes")
    if not offsets or not sizes:
        return None
    return dict(offsets), dict(sizes)


class Layout:
    """Workspace slots and their offsets."""

    def __init__(self, planned: tuple | None, scale: int = 1):
        self.slots: list = []
        self.planned = planned  # (offsets, sizes) or None
        self.scale = scale
        end = max((o + planned[1].get(t, 0) for t, o in planned[0].items()), default=0) \
            if planned else 0
        self.cursor = align(end * scale)  # where unplanned slots go when a plan exists

    def add(self, tensor: str, nbytes: Dim, max_bytes: int) -> Slot:
        offset = None
        if self.planned is not None:
            if tensor in self.planned[0]:
                offset = self.planned[0][tensor] * self.scale
            else:
                offset = self.cursor
                self.cursor = align(self.cursor + max_bytes)
        slot = Slot(len(self.slots), tensor, nbytes, offset)
        self.slots.append(slot)
        return slot

    def offset_lines(self) -> list:
        """[(index, C++ offset expression)] in slot order, then the total bytes expression."""
        lines = []
        if self.planned is not None:
            for s in self.slots:
                lines.append((s.index, str(s.offset)))
            total = str(self.cursor)
        else:
            prev = None
            for s in self.slots:
                lines.append((s.index, "0" if prev is None else
                              f"o[{prev.index}] + ait::align64({cexpr(prev.nbytes)})"))
                prev = s
            total = "0" if prev is None else f"o[{prev.index}] + ait::align64({cexpr(prev.nbytes)})"
        return lines, total

    def max_bytes(self, at_max) -> int:
        if self.planned is not None:
            return self.cursor
        return sum(align(at_max(s.nbytes)) for s in self.slots)

