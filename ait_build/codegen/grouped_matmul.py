"""grouped_matmul's lowering, one for every backend: a [S, K], b [G, K, N] (or [G, N, K] with
transpose_b) and offsets [G] (each group's rows end there) give out [S, N]. Each backend's
template does the groups: the cpu's one BLAS GEMM a group over the team, the GPU layer's one
output element a thread, and the cuda backend's CUTLASS grouped GEMM on tensor cores (the
problems read from the offsets on the device) where the sizes are whole 16-byte vectors."""

from __future__ import annotations

from ait_build.codegen.cexpr import cexpr
from ait_build.codegen.kernel import make_kernel
from ait_build.ir.dims import Dim
from ait_build.ir.dtypes import HALF_DTYPES

VECTOR = 8  # 16-bit elements per 16-byte vector: the tensor-core kernel moves whole ones
# one CUTLASS configuration: sm80's usual 128x128 tile, two blocks a multiprocessor (64 KiB of
# shared memory each), persistent over every group's tiles
TILE = dict(block="128, 128, 32", warp="64, 64, 32", stages=4, blocks_per_sm=2)


def scratch_bytes(groups: int) -> int:
    """The tensor-core kernel's problems in scratch: a GemmCoord (12 bytes) a group, rounded to
    16, then three pointers and three leading dims a group."""
    return (groups * 12 + 15) // 16 * 16 + 6 * 8 * groups


def lower(lw, elements: dict | None = None, gpu: bool = False) -> None:
    """`elements`: the backend's tensor-core element types by dtype (CUTLASS's), if it has them;
    on a `gpu`, a call that does not get them is named in the build's line of plain kernels."""
    node = lw.node
    a, b, offsets = node.inputs
    s, k = lw.shape(a)
    groups, n = lw.shape(b)[0], lw.shape(node.output)[1]
    ctype, dtype = lw.ctype(node.output), lw.dtype(node.output)
    trans_b = bool(node.attrs["transpose_b"])
    params = [(f"{ctype}*", "out"), (f"const {ctype}*", "a"), (f"const {ctype}*", "b"),
              (f"const {lw.ctype(offsets)}*", "offsets")]
    params += [("int64_t", p) for p in ("G", "S", "N", "K")]
    context = dict(ctype=ctype, trans_b=trans_b)
    kind, scratch = "grouped_matmul", 0
    whole = all(Dim.of(d).is_static and Dim.of(d).value % VECTOR == 0 for d in (k, n))
    if elements and dtype in HALF_DTYPES and whole and Dim.of(groups).is_static:
        kind, scratch = "grouped_matmul_tc", scratch_bytes(Dim.of(groups).value)
        context.update(TILE, element=elements[dtype], index_ctype=lw.ctype(offsets))
    elif gpu:
        if not elements:
            why = "no tensor-core form on this target"
        elif dtype not in HALF_DTYPES:
            why = dtype
        else:
            why = f"k={k}, n={n} not multiples of {VECTOR}"
        lw.plain_kernel(f"grouped matmul: {why}")
    kernel = make_kernel(kind, node.op, lw.template(kind), context, params)
    lw.call(kernel, [lw.dst(node.output), lw.src(a), lw.src(b), lw.src(offsets), cexpr(groups),
                     cexpr(s), cexpr(n), cexpr(k)],
            scratch_shared=scratch, flops=Dim.of(s) * (2 * Dim.of(n) * Dim.of(k)))
