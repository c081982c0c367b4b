"""Target spec -> a frozen `Target`. The target file is the single source of truth for the
hardware: code asks its capabilities, never the architecture name.

What only a backend knows (its arch names, the kernel families `kernels:` may name and the arch
each runs on, the flags only `arch` may set, what `precision.accumulate` may be) comes from the
backend table the caller passes (`backends`: name -> backends.base.Backend; pipeline.py's
find_target passes the package's), so this module imports no backend."""

from __future__ import annotations

import glob
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass

from ait_build.errors import AitError, SpecError, did_you_mean, shown
from ait_build.ir.dtypes import ALL_DTYPES
from ait_build.ir.resources import data_dir, project_targets
from ait_build.spec.fields import check_header, check_keys, check_path, expect_map, get, string_list
from ait_build.spec.names import check_target_name
from ait_build.spec.yamlfile import load_yaml, where

TARGET_FIELDS = ("apiVersion", "kind", "name", "description", "backend", "arch", "compiler",
                 "device", "kernels", "capabilities", "precision", "profile_cache", "sources")
COMPILER_FIELDS = ("cxx", "flags", "link_flags", "min_version")
ARCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+:-]*")  # gfx90a:xnack- too
VERSION = re.compile(r"\d+(\.\d+)*")
DEVICE_FIELDS = ("cores", "sm_count", "smem_per_block", "peak_fp16_tflops", "peak_fp32_tflops",
                 "hbm_tbps", "memory_gb", "l2_mb", "simd")
CAPABILITY_FIELDS = ("dtypes", "fused_epilogue", "fused_attention", "fused_layernorm",
                     "channel_alignment", "im2col_channels", "direct_stem_outputs",
                     "cuda_graphs", "async_copy", "dependent_launch",
                     "dependent_launch_max_mb")
# im2col_channels 0: only convs over fewer channels than the alignment gather their windows;
# direct_stem_outputs 0: every conv that gathers its windows is im2col + GEMM;
# dependent_launch_max_mb 0: dependent launches (where on) for calls of any size
CAPABILITY_DEFAULTS = {"dtypes": ("float32",), "fused_epilogue": True, "fused_attention": True,
                       "fused_layernorm": True, "channel_alignment": 1, "im2col_channels": 0,
                       "direct_stem_outputs": 0, "cuda_graphs": False, "async_copy": False,
                       "dependent_launch": False, "dependent_launch_max_mb": 0}
INT_CAPABILITIES = {"channel_alignment": 1, "im2col_channels": 0,  # key -> its least value
                    "direct_stem_outputs": 0, "dependent_launch_max_mb": 0}
# ... and the most: the pad_channels pass pads weights to the alignment (an alignment of 2^40
# would allocate terabytes); the others are counts the generated C++ holds in an int
MOST = {"channel_alignment": 256}
MAX_INT_CAPABILITY = 2**31 - 1
# precision.accumulate: what the tensor-core GEMMs and convs of float16 models accumulate in,
# one of the backend's `accumulate` (float16: an opt-in); bfloat16 models keep float32 (tensor
# cores have no bfloat16 accumulate) and float32 models their 3xTF32.
PRECISION_FIELDS = ("accumulate",)


@dataclass(frozen=True)
class Target:
    name: str
    backend: str
    arch: str
    cxx: str
    flags: tuple
    link_flags: tuple
    device: tuple  # sorted (key, value) pairs
    kernels: tuple  # sorted (op, kernel family) pairs
    capabilities: tuple  # sorted (key, value) pairs
    profile_cache: str
    source: str
    precision: tuple = (("accumulate", "float32"),)  # sorted (key, value) pairs
    min_version: str = ""  # compiler.min_version: the oldest compiler version it builds with

    def cap(self, key: str):
        return dict(self.capabilities)[key]

    def kernel(self, op: str, default: str = "") -> str:
        return dict(self.kernels).get(op, default)

    def accumulator(self, dtype: str) -> str:
        """The dtype a `dtype` model's tensor-core GEMMs and convs accumulate in: float16 only
        for float16 models on a target with `precision: {accumulate: float16}`."""
        if dtype == "float16" and dict(self.precision)["accumulate"] == "float16":
            return "float16"
        return "float32"

    def fact(self, key: str, default=None):
        return dict(self.device).get(key, default)

    def digest(self) -> str:
        """Content hash of the resolved target (SCons uses it as a Value node)."""
        data = {k: v for k, v in self.__dict__.items() if k != "source"}
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=list).encode()).hexdigest()[:16]


def _precision(doc, backend: str, backends) -> tuple:
    """precision: {accumulate: one of the backend's} -> sorted (key, value) pairs."""
    values = {"accumulate": "float32"}
    if "precision" not in doc:
        return tuple(sorted(values.items()))
    raw = expect_map(doc["precision"], where(doc, "precision"), "precision")
    check_keys(raw, PRECISION_FIELDS, "precision")
    if "accumulate" in raw:
        value = get(raw, "accumulate", str, "precision")
        if value not in backends[backend].accumulate:
            known = list(dict.fromkeys(a for name in sorted(backends)
                                       for a in backends[name].accumulate))
            if value not in known:
                raise SpecError(f"precision.accumulate must be one of {', '.join(known)}, got "
                                f"'{value}'" + did_you_mean(value, known), raw.where("accumulate"))
            implementing = [name for name in sorted(backends) if value in backends[name].accumulate]
            raise SpecError(f"precision.accumulate '{value}' is implemented by the "
                            f"{', '.join(implementing)} backend only, not {backend}",
                            raw.where("accumulate"))
        values["accumulate"] = value
    return tuple(sorted(values.items()))


def _check_for_backend(doc, b, arch: str, compiler, flags: tuple, kernels) -> None:
    """What only the backend `b` knows: whether it takes `arch`, which flags would choose the
    architecture behind `arch`'s back, the kernel families `kernels:` may name and the arch each
    runs on."""
    backend = b.name
    try:
        b.arch_flags(arch)
    except AitError as exc:
        raise SpecError(str(exc), where(doc, "arch") or doc.loc) from None
    for i, flag in enumerate(flags):
        if flag.split("=", 1)[0] in b.arch_options:
            raise SpecError(f"compiler.flags must not choose the architecture ('{flag}'): `arch: "
                            f"{arch}` does", compiler["flags"].where(i))
    for op, family in kernels.items():
        if op not in b.kernel_families:
            raise SpecError(f"kernels: the {backend} backend has no kernel choice for '{op}'"
                            + did_you_mean(op, b.kernel_families) + "; it has "
                            + (", ".join(sorted(b.kernel_families)) or "none"),
                            kernels.key_loc.get(op) or kernels.where(op))
        if family not in b.kernel_families[op]:
            choices = b.kernel_families[op]
            raise SpecError(f"kernels.{op}: the {backend} backend has no kernel family '{family}'"
                            + did_you_mean(family, choices) + f"; one of {', '.join(choices)}",
                            kernels.where(op))
        archs = b.kernel_archs.get(family)
        if archs is not None and not archs.accepts(arch):
            raise SpecError(f"kernels.{op}: '{family}' runs on arch {archs.text}; this target's "
                            f"arch is {arch}", kernels.where(op))
    problem = b.kernels_conflict(dict(kernels)) if b.kernels_conflict else ""
    if problem:
        raise SpecError(problem, kernels.where("conv2d") if "conv2d" in kernels else kernels.loc)


def _command_line(compiler) -> None:
    """compiler.cxx and its flags become a command line: each one argument, none of them empty
    (the compiler would read an empty one as a file name)."""
    for key in ("cxx", "flags", "link_flags"):
        values = compiler.get(key)
        items = [(values, where(compiler, key))] if isinstance(values, str) else \
            [(v, where(values, i)) for i, v in enumerate(values)] if isinstance(values, list) else []
        for value, loc in items:
            if isinstance(value, str):
                check_path(value, loc, f"compiler.{key}", "command-line argument")
                if not value.strip():
                    raise SpecError("compiler.cxx is empty: name the compiler (g++, nvcc, hipcc)"
                                    if key == "cxx" else f"compiler.{key} holds an empty flag",
                                    loc)


def load_target(path: str, backends) -> Target:
    """The target file at `path`, checked against its backend in `backends` (name -> Backend)."""
    doc = check_header(load_yaml(path), path, "Target")
    check_keys(doc, TARGET_FIELDS, "a target spec", required=("name", "backend", "compiler"))
    name = get(doc, "name", str, "the target")
    check_target_name(name, where(doc, "name"))
    backend = get(doc, "backend", str, "the target")
    if backend not in backends:
        names = sorted(backends)
        raise SpecError(f"unknown backend {shown(backend)}" + did_you_mean(backend, names)
                        + f"; one of {', '.join(names)}", where(doc, "backend"))
    arch = get(doc, "arch", str, "the target", default="")
    if arch and not ARCH.fullmatch(arch):  # one compiler word: it goes into a flag as it is
        raise SpecError(f"arch must be one architecture name (letters, digits, . _ + : -), "
                        f"got {shown(arch)}", where(doc, "arch"))
    if backends[backend].needs_arch and not arch:
        raise SpecError(f"a {backend} target needs 'arch' (e.g. sm_90a, gfx90a)", doc.loc)
    compiler = expect_map(doc["compiler"], where(doc, "compiler"), "compiler")
    check_keys(compiler, COMPILER_FIELDS, "compiler", required=("cxx",))
    min_version = str(get(compiler, "min_version", (str, float), "compiler", default=""))
    if min_version and not VERSION.fullmatch(min_version):
        raise SpecError(f"compiler.min_version must be a version like 11 or 12.2, got "
                        f"{shown(min_version)}", compiler.where("min_version"))
    device = expect_map(doc.get("device", {}), where(doc, "device"), "device") if "device" in doc else {}
    if device:
        check_keys(device, DEVICE_FIELDS, "device")
        for key, value in device.items():
            number = get(device, key, float, "device")
            if not number > 0:  # nan too
                raise SpecError(f"'{key}' in device must be positive, got {value}", device.where(key))
            if math.isinf(number):
                raise SpecError(f"'{key}' in device must be finite, got {value}", device.where(key))
    kernels = expect_map(doc["kernels"], where(doc, "kernels"), "kernels") if "kernels" in doc else {}
    for key in kernels:
        get(kernels, key, str, "kernels")
    caps = dict(CAPABILITY_DEFAULTS)
    if "capabilities" in doc:
        raw = expect_map(doc["capabilities"], where(doc, "capabilities"), "capabilities")
        check_keys(raw, CAPABILITY_FIELDS, "capabilities")
        for key, value in raw.items():
            if key == "dtypes":
                caps[key] = string_list(raw, key, "capabilities")
                if not caps[key]:
                    raise SpecError("capabilities.dtypes is empty: name the dtypes the target "
                                    "builds (e.g. [float32, float16])", raw.where(key))
                for i, dtype in enumerate(caps[key]):
                    if dtype not in ALL_DTYPES:
                        raise SpecError(f"unknown dtype {shown(dtype)} in capabilities.dtypes"
                                        + did_you_mean(dtype, ALL_DTYPES), raw[key].where(i))
            elif key in INT_CAPABILITIES:
                caps[key] = get(raw, key, int, "capabilities")
                if caps[key] < INT_CAPABILITIES[key]:
                    raise SpecError(f"'{key}' in capabilities must be at least "
                                    f"{INT_CAPABILITIES[key]}, got {caps[key]}", raw.where(key))
                most = MOST.get(key, MAX_INT_CAPABILITY)
                if caps[key] > most:
                    raise SpecError(f"'{key}' in capabilities must be at most {most}, got "
                                    f"{caps[key]}", raw.where(key))
            else:
                caps[key] = get(raw, key, bool, "capabilities")
    precision = _precision(doc, backend, backends)
    flags = string_list(compiler, "flags", "compiler")
    _command_line(compiler)
    _check_for_backend(doc, backends[backend], arch, compiler, flags, kernels)
    _check_simd(device, backends[backend])
    string_list(doc, "sources", "target")
    return Target(
        name=name, backend=backend, arch=arch, cxx=get(compiler, "cxx", str, "compiler"),
        flags=flags,
        link_flags=string_list(compiler, "link_flags", "compiler"),
        device=tuple(sorted(device.items())), kernels=tuple(sorted(kernels.items())),
        capabilities=tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else v)
                                  for k, v in caps.items())),
        profile_cache=check_path(get(doc, "profile_cache", str, "the target", default=""),
                                 where(doc, "profile_cache"), "profile_cache"), source=path,
        precision=precision, min_version=min_version)


def _check_simd(device, b) -> None:
    """device.simd, the float32 lanes the loops are laid out for, is one its backend knows (3.5
    failed only in the build); whether the compiler's machine has that width the build says."""
    if "simd" in device and b.simd_lanes and device["simd"] not in b.simd_lanes:
        raise SpecError(f"'simd' in device must be one of {', '.join(map(str, b.simd_lanes))} "
                        f"(float32 lanes per vector) for the {b.name} backend, got "
                        f"{device['simd']}", device.where("simd"))


def stock_targets_dir() -> str:
    """The targets that ship with ait-build (cpu, a100, h100, h200, mi250)."""
    return data_dir("targets")


def target_files(directory: str | None = None) -> dict:
    """name -> (path, 'stock' | 'project') of every target a project can name: the stock ones,
    then the files of the project's targets/ (`directory`; default: the project around the
    working directory), which override a stock target of the same name or add new ones."""
    stock = stock_targets_dir()
    project = directory or project_targets()
    found = {}
    for origin, folder in (("stock", stock), ("project", project)):
        if origin == "project" and os.path.realpath(folder) == os.path.realpath(stock):
            continue  # ait-build's own checkout: its targets/ is the stock folder
        for path in sorted(glob.glob(os.path.join(folder, "*.yaml"))):
            found[os.path.splitext(os.path.basename(path))[0]] = (path, origin)
    return dict(sorted(found.items()))


def known_targets(directory: str | None = None) -> list:
    return list(target_files(directory))


def find_target(name_or_path: str, backends, directory: str | None = None) -> Target:
    """A target by path, or by name: the project's targets/<name>.yaml (`directory`), else the
    stock one; checked against `backends` as load_target does."""
    if name_or_path.endswith((".yaml", ".yml")) or os.sep in name_or_path:
        return load_target(name_or_path, backends)
    files = target_files(directory)
    if name_or_path not in files:
        names = list(files)
        raise SpecError(f"unknown target '{name_or_path}'" + did_you_mean(name_or_path, names)
                        + f"; known targets: {', '.join(names) or 'none'} (ait-build's own and "
                        f"the files in {directory or project_targets()})")
    return load_target(files[name_or_path][0], backends)
