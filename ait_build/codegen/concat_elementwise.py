"""Lowering of `concat_elementwise` (a concat along the last dim run through an elementwise
program, passes/fuse_concat.py) on any backend: one call of the backend's `concat_elementwise`
template, which reads each piece once and writes its channels of the output once, with the
program applied. The program's other operands are per-channel vectors or single values (the
pass allows nothing else): a vector is read at the output channel, a single value once.

Parameters: out, the pieces p0, p1, ... (the output's type), the operands x1, x2, ... (their own
types), rows (the product of every dim but the last) and each piece's width w0, w1, ...; the
program's statements use v0 for the concat's element and v1, v2, ... for the operands, as
fused_elementwise's do (codegen/elementwise.py)."""

from __future__ import annotations

from ait_build.codegen.cexpr import cexpr, elements
from ait_build.codegen.elementwise import program_code
from ait_build.codegen.kernel import make_kernel
from ait_build.ops.opdef import TType


def lower_concat_elementwise(lw) -> None:
    node = lw.node
    pieces, others = node.inputs[:node.attrs["pieces"]], node.inputs[node.attrs["pieces"]:]
    out = node.output
    joined = TType(lw.shape(out), lw.dtype(pieces[0]))
    stmts, label = program_code(lw, node.attrs["program"],
                                [joined] + [TType(lw.shape(t), lw.dtype(t)) for t in others])
    ctype = lw.ctype(out)
    kinds = tuple("s" if all(d == 1 for d in lw.shape(t)) else "v" for t in others)
    params = [(f"{ctype}*", "out")] + [(f"const {ctype}*", f"p{k}") for k in range(len(pieces))]
    params += [(f"const {lw.ctype(t)}*", f"x{1 + i}") for i, t in enumerate(others)]
    params += [("int64_t", "rows")] + [("int64_t", f"w{k}") for k in range(len(pieces))]
    context = dict(pieces=len(pieces), n_in=1 + len(others), in_kinds=("v",) + kinds,
                   in_ctypes=(ctype,) + tuple(lw.ctype(t) for t in others), ctype=ctype,
                   stmts=stmts, expr=f"t{len(stmts) - 1}")
    kernel = make_kernel(f"concat_{label}", node.op, lw.template("concat_elementwise"), context,
                         params)
    args = [lw.dst(out)] + [lw.src(t) for t in pieces] + [lw.src(t) for t in others]
    args += [cexpr(elements(lw.shape(out)[:-1]))] + [cexpr(lw.shape(t)[-1]) for t in pieces]
    lw.call(kernel, args)
