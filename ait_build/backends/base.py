"""What a backend is: one object that describes everything code generation, the build and the
runtime need to know about it. Each backend package (backends/<name>/) makes one `Backend`;
nothing outside the package asks which backend it is by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping


def frozen(mapping: Mapping) -> Mapping:
    """A read-only view of a table (a Backend's tables are shared by every plan)."""
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class Archs:
    """The `arch` values a kernel family runs on: a test, and how an error names them."""

    text: str  # e.g. "sm_80 or newer"
    accepts: Callable  # (arch) -> bool; arch already passed the backend's arch_flags


@dataclass(frozen=True)
class Backend:
    name: str  # what targets name in `backend:`
    # code generation
    lower: Mapping  # op -> lowering function taking a codegen.plan.Lowerer
    templates: Mapping  # kernel kind -> this backend's template (the shared lowerings ask by kind)
    model_template: str  # src/model.cpp
    support_files: Mapping  # generated path -> template: headers every source of a model includes
    ctypes: Mapping  # dtype -> C++ storage type of tensors (and weights) in the library
    io_ctypes: Mapping  # dtype -> C++ type of the caller's input/output buffers
    sizeof: Mapping  # C++ storage type -> bytes
    compute_dtype: str  # what float kernels compute in (the manifest's compute_dtype)
    weight_storage: Mapping  # float dtype -> the dtype its weights are stored in, where a
    # lowering does not ask for another
    lower_inputs: Callable  # (ModelPlan) -> None: the model's inputs as values (conversions)
    lower_outputs: Callable  # (ModelPlan) -> None: outputs not written in place
    # the build
    toolchain: Callable  # (target) -> toolchain.Toolchain; raises AitError naming what to install
    arch_flags: Callable  # (arch) -> compiler flags selecting it; raises AitError for an unknown arch
    compile_job_memory: int  # peak compiler memory per parallel compile job, bytes
    arch_options: tuple = ()  # compiler options that choose an architecture (only `arch:` may)
    # targets (checked when one loads)
    kernel_families: Mapping = field(default_factory=dict)  # op -> families `kernels:` may name
    kernel_archs: Mapping = field(default_factory=dict)  # family -> Archs it runs on (absent: any)
    kernels_conflict: Callable | None = None  # (kernels: op -> family) -> why they clash, or ''
    needs_arch: bool = False  # a target must name its `arch` (a GPU architecture)
    accumulate: tuple = ("float32",)  # what `precision.accumulate` may name (float16 models' GEMMs)
    simd_lanes: tuple = ()  # what `device.simd` may be (float32 lanes; empty: it reads none)
    # the runtime: 'host' (the caller's buffers are host memory) or the device API whose
    # pointers the library takes ('cuda', 'hip')
    device: str = "host"
    step_timing: bool = False  # the library exports num_steps() and time_steps()
    render_globals: Mapping = field(default_factory=dict)  # names every template of it may use
    profile_driver: str = ""  # template of the `ait-build profile` timing driver ('' : none)
    # a header template every kernel source begins with, which the build precompiles once per
    # target where the compiler can ('' : none; build/precompiled.py)
    precompiled_header: str = ""

    def template(self, kind: str) -> str:
        try:
            return self.templates[kind]
        except KeyError:
            raise KeyError(f"internal: the {self.name} backend has no '{kind}' template") from None

    @property
    def on_device(self) -> bool:
        """Whether the library's tensors (inputs and outputs included) live in device memory."""
        return self.device != "host"
