"""The epilogue a GEMM-shaped node carries (linear, matmul, bmm, conv2d): out = act(acc + bias +
residual), split into what the node's kernel fuses and what an elementwise pass over its output
adds afterwards. Which residuals a kernel reads is the backend's (`fused_modes`); a residual of
any other shape is added later, and the activation waits for it."""

from __future__ import annotations

from ait_build.codegen.elementwise import Operand, act_fn, elementwise
from ait_build.codegen.op_geometry import residual_mode


class Epilogue:
    """`act`: the node's activation (`attrs`: the node's, for hardtanh's bounds); `kernel_act`:
    what its kernel applies ('none' when the later pass does); `residual`, `mode`: the residual
    the kernel adds and how it broadcasts ('full', 'row'; 'none' without one); `later`: a
    residual the pass after the kernel adds."""

    def __init__(self, lw, data_inputs: int, fused_modes: tuple = ("full", "row")):
        node = lw.node
        self.act = node.attrs.get("activation", "none")
        self.attrs = node.attrs
        residual = node.inputs[data_inputs] if len(node.inputs) > data_inputs else None
        self.residual, self.mode, self.later = None, "none", None
        if residual is not None:
            mode = residual_mode(lw.shape(node.output), lw.shape(residual))
            if mode in fused_modes:
                self.residual, self.mode = residual, mode
            else:
                self.later = residual
        self.kernel_act = "none" if self.later else self.act

    def finish(self, lw, out: str) -> None:
        """Adds a residual the kernel could not (then the activation) in place over the output."""
        if self.later is None:
            return
        dst = Operand(lw.dst(out), lw.ctype(out), lw.shape(out))
        res = Operand(lw.src(self.later), lw.ctype(self.later), lw.shape(self.later))
        elementwise(lw, "residual", dst, [dst, res], f"{act_fn(self.act, self.attrs)}((v0 + v1))")
