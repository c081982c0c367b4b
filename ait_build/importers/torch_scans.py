"""ATen scans along an axis: cumsum and its inverse, diff. transformers' masks use both
(GPT-2 tells packed sequences apart by `(diff(position_ids, prepend=first - 1) != 1).cumsum(-1)`),
on tensors of a batch of positions, so both are written with existing elementwise and copy ops
(Lower.cumsum) rather than as kernels of their own. The table joins torch_ops.HANDLERS.
"""

from __future__ import annotations

from ait_build.errors import AitError
from ait_build.importers.graph import registrar
from ait_build.importers.torch_args import arg

HANDLERS: dict = {}
handles = registrar(HANDLERS)


@handles("aten.cumsum.default")
def _cumsum(t, node):
    # the result's dtype: int64 for bools and integers, or the one the call asks for
    return t.lower.cumsum(t.tensor(node.args[0]), node.args[1], t.dtype(node))


@handles("aten.diff.default")
def _diff(t, node):
    """x[1:] - x[:-1] along `dim`, n times, after prepend and append; of bools, x[1:] != x[:-1]
    (torch's xor)."""
    x = t.tensor(node.args[0])
    n, dim = arg(node, 1, "n", 1), arg(node, 2, "dim", -1) % x.rank
    prepend, append = arg(node, 3, "prepend"), arg(node, 4, "append")
    if any(p is not None and not hasattr(p, "op") for p in (prepend, append)):
        raise AitError("diff with a number to prepend or append")
    parts = [t.tensor(p) for p in (prepend,) if p is not None] + [x] + \
        [t.tensor(a) for a in (append,) if a is not None]
    y = t.lower.concat(parts, dim) if len(parts) > 1 else x
    for _ in range(n):
        later, earlier = t.lower.slice(y, dim, 1, None), t.lower.slice(y, dim, 0, -1)
        y = t.lower.binary("not_equal" if y.dtype == "bool" else "sub", later, earlier)
    return y
