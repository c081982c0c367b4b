"""Kernels and steps: what the planner hands to the renderer.

A kernel is one generated C++ function: a template and the flat context it is rendered with.
Its identity is a hash of exactly that (plus its parameter list): of the template's content and
of everything it extends, includes or imports, not of its path, so two nodes share a kernel
precisely when their code would be byte-identical, and the name (`conv2d_relu_1a2b3c4d`) doubles
as file name and cache key. A step is one call of a kernel with C++ argument expressions.
"""

from __future__ import annotations

import functools
import hashlib
import os
import json
from dataclasses import dataclass

from ait_build.codegen.render import template_deps, template_path

CONTEXT_TYPES = (str, int, float, bool)


@dataclass(frozen=True)
class Kernel:
    name: str
    label: str
    op: str
    template: str  # relative to templates/, e.g. 'cpu/gemm.cpp.j2'
    context: tuple  # sorted (key, value) pairs; values are str/int/float/bool or tuples of them
    params: str  # the C++ parameter list after the Ctx
    parts: tuple = ()  # kernels of its own that this one calls, each its own source file

    @property
    def source(self) -> str:
        """src/<name> with the template's own suffix ('gemm.cu.j2' -> .cu; cpu's stay .cpp)."""
        stem = self.template[:-3] if self.template.endswith(".j2") else self.template
        return f"src/{self.name}{os.path.splitext(stem)[1] or '.cpp'}"

    def render_context(self) -> dict:
        ctx = dict(self.context)
        ctx.update(name=self.name, op=self.op, label=self.label, params=self.params)
        return ctx


@dataclass(frozen=True)
class Step:
    node: str  # graph node this call implements ('' for input/output conversions)
    kernel: Kernel
    args: tuple  # C++ expressions, in parameter order
    scratch_shared: int = 0  # bytes at max dims, shared by the team
    scratch_thread: int = 0  # bytes at max dims, per OpenMP thread
    tuning: object = None  # a tuning.TunedCall until tuning.finalize gives the step its kernel
    flops: object = 0  # Dim: the step's floating-point operations (GEMM-shaped steps), for reports


def _check_context(context: dict) -> None:
    for key, value in context.items():
        items = value if isinstance(value, tuple) else (value,)
        if not all(isinstance(v, CONTEXT_TYPES) for v in items):
            raise TypeError(f"kernel context '{key}' must be flat, got {value!r}")


@functools.lru_cache(maxsize=None)
def template_digest(template: str) -> str:
    """sha256 of the contents of the template and of every template it extends, includes or
    imports (template_deps), each file's digest in sorted order: what its output depends on besides
    the context, whatever the files are called."""
    files = []
    for dep in template_deps(template):
        with open(template_path(dep), "rb") as fh:
            files.append(hashlib.sha256(fh.read()).hexdigest())
    return hashlib.sha256(" ".join(sorted(files)).encode()).hexdigest()


def make_kernel(label: str, op: str, template: str, context: dict, params: list,
                parts: tuple = ()) -> Kernel:
    """`params` are (ctype, name) pairs; the name is derived from everything that shapes the code
    (`parts` are named in the context of the kernel that calls them)."""
    _check_context(context)
    param_text = ", ".join(f"{ctype} {name}" for ctype, name in params)
    identity = json.dumps({"template": template_digest(template), "op": op, "context": context,
                           "params": param_text},
                          sort_keys=True)
    digest = hashlib.sha256(identity.encode()).hexdigest()[:8]
    return Kernel(name=f"{label}_{digest}", label=label, op=op, template=template,
                  context=tuple(sorted(context.items())), params=param_text, parts=tuple(parts))


def io_params(lw, out: str, *names: str) -> list:
    """(ctype, name) pairs for `out` and same-typed inputs, in the backend's storage type."""
    ctype = lw.ctype(out)
    return [(f"{ctype}*", "out")] + [(f"const {ctype}*", n) for n in names]
