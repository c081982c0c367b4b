"""The workspace placement rule every memory plan uses: groups of tensors with lifetimes, placed
greedily by size (largest first, each into the tightest gap among the groups it overlaps in time,
else on top), the offset rule of Pisarchyk & Lee (2020) that AITemplate also uses.

One implementation for the optimizer's plan (passes/plan_memory.py) and the workspace size the
generated library reports (codegen/storage.py); the library repeats it in C++ at run time
(ait::Placer in templates/common/include/ait_runtime.h, with the same two trees) for the dims of
each call, and tests/backends/cpu/test_runtime_placement.py checks that the two agree.

The groups are placed in size order, not in time order, so the groups a new one must avoid are
not a sweep's live set (released by end time, as a time-ordered allocator keeps it): any placed
group may overlap the next one in time. Scanning every placed group for each new one made the rule
quadratic (a chain of 24,000 groups took minutes). A `_Timeline` finds the placed groups live
during a lifetime in O(log positions + found), and the gap search sorts just those: O(n log n)
for n groups when few are live at once, with the same offsets as the scan.
"""

from __future__ import annotations


class _Timeline:
    """Placed groups by the positions they are live at, in two segment trees over positions
    0 .. width-1: `covering` keeps each group at the O(log width) nodes that tile its lifetime,
    `starting` at every node above its first position. The groups live during start .. end are
    those live at `start` (on the path from its leaf up, in `covering`) and those starting in
    start+1 .. end (at the nodes tiling that range, in `starting`): each found once."""

    def __init__(self, width: int):
        self.leaves = 1 << max(width - 1, 0).bit_length()
        self.covering: dict = {}  # node -> groups live at all of its positions
        self.starting: dict = {}  # node -> groups whose first position is one of its positions

    def _tiles(self, first: int, last: int):
        """The nodes whose positions tile first .. last."""
        lo, hi = first + self.leaves, last + self.leaves + 1
        while lo < hi:
            if lo & 1:
                yield lo
                lo += 1
            if hi & 1:
                hi -= 1
                yield hi
            lo, hi = lo // 2, hi // 2

    def _path(self, position: int):
        """The nodes from the leaf of `position` up to the root."""
        node = position + self.leaves
        while node:
            yield node
            node //= 2

    def add(self, group, start: int, end: int) -> None:
        for node in self._tiles(start, end):
            self.covering.setdefault(node, []).append(group)
        for node in self._path(start):
            self.starting.setdefault(node, []).append(group)

    def overlapping(self, start: int, end: int) -> list:
        """The groups live at some position in start .. end."""
        return [g for node in self._path(start) for g in self.covering.get(node, ())] + \
            [g for node in self._tiles(start + 1, end) for g in self.starting.get(node, ())]


def tightest_gap(busy: list, size: int) -> int:
    """The offset of the smallest gap of at least `size` bytes below the top of `busy` (sorted
    (offset, bytes) pairs; the lowest such gap on ties), else the top."""
    best, best_gap, cursor = None, None, 0
    for o, s in busy:
        gap = o - cursor
        if gap >= size and (best_gap is None or gap < best_gap):
            best, best_gap = cursor, gap
        cursor = max(cursor, o + s)
    return best if best is not None else cursor


def place_groups(order: list, size: dict, start: dict, end: dict) -> tuple:
    """(offsets by group, bytes spanned) placing the groups in `order`; `start`/`end`: the first
    and last position each group is live at (integers, 0 <= start <= end)."""
    offsets, top = {}, 0
    placed = _Timeline(max((end[g] for g in order), default=0) + 1)
    for g in order:
        busy = sorted((offsets[h], size[h]) for h in placed.overlapping(start[g], end[g]))
        offsets[g] = tightest_gap(busy, size[g])
        placed.add(g, start[g], end[g])
        top = max(top, offsets[g] + size[g])
    return offsets, top


def place(sizes: list, lifetimes: list) -> tuple:
    """(offsets, bytes spanned) of groups given as lists: largest first; ties: earlier start,
    then index (the order ait::place uses)."""
    order = sorted(range(len(sizes)), key=lambda g: (-sizes[g], lifetimes[g][0], g))
    by_group, top = place_groups(order, dict(enumerate(sizes)),
                                 {g: lt[0] for g, lt in enumerate(lifetimes)},
                                 {g: lt[1] for g, lt in enumerate(lifetimes)})
    return [by_group[g] for g in range(len(sizes))], top
