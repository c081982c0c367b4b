"""The workspace placement rule every memory plan uses: groups of tensors with lifetimes, placed
greedily by size (largest first, each into the tightest gap among the groups it overlaps in time,
else on top), the offset rule of Pisarchyk & Lee (2020) that AITemplate also uses.

One implementation for the optimizer's plan (passes/plan_memory.py) and the workspace size the
generated library reports (codegen/storage.py); the library repeats it in C++ at run time
(ait::place in templates/common/include/ait_runtime.h) for the dims of each call.
"""

from __future__ import annotations


def place_groups(order: list, size: dict, start: dict, end: dict) -> tuple:
    """(offsets by group, bytes spanned) placing the groups in `order`; `start`/`end`: the first
    and last position each group is live at."""
    offsets, placed, top = {}, [], 0
    for g in order:
        busy = sorted((o, s) for h, o, s in placed if start[h] <= end[g] and start[g] <= end[h])
        best, best_gap, cursor = None, None, 0
        for o, s in busy:
            gap = o - cursor
            if gap >= size[g] and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, o + s)
        offsets[g] = best if best is not None else cursor
        placed.append((g, offsets[g], size[g]))
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
