"""Where each tensor lives in the generated forward(): a user buffer, a weight, a view of another
tensor, or a group in the workspace.

Workspace tensors form groups: one tensor, or several the optimizer's memory plan lets share
bytes (an elementwise/row op or a GEMM residual written in place). A group is live from the first
to the last node that touches any of its tensors or their views. Offsets are placed at run time
for the actual dims (ait::place in ait_runtime.h, the plan's greedy best-fit rule), because a plan
made at the max dims can need far more memory than a small batch: BERT-base at batch 256 and
sequence 4096 needs 24 GiB, at batch 1 and 128 a few MiB. placement.place is the same rule in
Python, for the manifest's workspace size at the max dims.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ait_build.codegen.cexpr import cexpr
from ait_build.ir.dims import Dim
from ait_build.ir.placement import place

ALIGN = 64


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
    base: str = ""  # views: the tensor whose storage they share
    group: int = -1  # work tensors: their workspace group


@dataclass
class Group:
    index: int
    tensors: list
    sizes: list  # Dim bytes of each member (they share the largest)
    start: int  # first and last position (0: input conversions, i + 1: node i, n + 1: outputs)
    end: int


@dataclass
class Layout:
    aliases: dict = field(default_factory=dict)  # tensor -> tensor whose bytes it may reuse
    groups: list = field(default_factory=list)
    of: dict = field(default_factory=dict)  # tensor -> group index

    def add(self, tensor: str, nbytes: Dim, position: int) -> Group:
        """A workspace home for `tensor`: the group of the tensor it may overwrite, else a new one."""
        shared = self.of.get(self.aliases.get(tensor, ""))
        if shared is not None:
            group = self.groups[shared]
            group.tensors.append(tensor)
            group.sizes.append(nbytes)
        else:
            group = Group(len(self.groups), [tensor], [nbytes], position, position)
            self.groups.append(group)
        self.of[tensor] = group.index
        self.touch(group.index, position)
        return group

    def touch(self, index: int, position: int) -> None:
        group = self.groups[index]
        group.start, group.end = min(group.start, position), max(group.end, position)

    def size_exprs(self) -> list:
        """C++ bytes of each group (the largest member, 64-byte aligned by the caller)."""
        out = []
        for g in self.groups:
            exprs = list(dict.fromkeys(cexpr(s) for s in g.sizes))
            out.append(exprs[0] if len(exprs) == 1 else
                       "std::max<int64_t>({" + ", ".join(exprs) + "})")
        return out

    def bytes_at(self, env: dict) -> int:
        sizes = [align(max(s.eval(env) for s in g.sizes)) for g in self.groups]
        return place(sizes, [(g.start, g.end) for g in self.groups])[1]
