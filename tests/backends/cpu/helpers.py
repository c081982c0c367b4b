"""Building and running specs on the cpu backend in tests: emit a spec, compile it with the
toolchain's command lines (plain subprocesses, both cores), load the library with ctypes and run
it (tests/conftest.py's fixtures build_spec, cpu_target and object_cache use these).

Objects are cached for the run by the hash of everything that goes into them (source, support
headers, command) in a folder all xdist workers share (shared_cache.py), so a kernel shared by
several test models compiles once in the whole run: a worker takes the entry's lock, compiles
only if no one has, and renames the finished object into place.

A kernel's compile is mostly parsing its one header, ait_cpu.h (the standard library and the
intrinsics), so that header is precompiled once per run for each command and set of header bytes
and linked beside each model's copy, where g++ reads it instead (a build precompiles its own,
ait_build/build/precompiled.py). model.cpp includes standard headers before ait_cpu.h, where
that .gch cannot serve it, so its leading includes are precompiled as one header of their own
(the same for every model) and taken with `-include`. The objects are byte-identical to those of
the plain compile (tests/backends/cpu/test_headers.py checks both): the tests still compile what
a build compiles.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import yaml

from ait_build.build.runtime_files import carry
from ait_build.ir.dtypes import NUMPY

JOBS = max(2, os.cpu_count() or 2)
_OBJECTS: dict = {}  # content hash -> cached object path


KERNEL_HEADER = "src/ait_cpu.h"  # what every cpu kernel source includes first


def _content_key(tc, out_dir: str, paths) -> str:
    """The hash of a compile's command, the compiler's version (a folder in AIT_TEST_CACHE may
    outlive a compiler upgrade) and the bytes of the files it reads."""
    digest = hashlib.sha256(" ".join(tc.compile_command("x", "y") + [tc.version()]).encode())
    for path in paths:
        with open(os.path.join(out_dir, path), "rb") as fh:
            digest.update(fh.read())
    return digest.hexdigest()


def _once(path: str, make) -> str:
    """`path` in the shared cache, made by `make(partial)` unless a worker or thread made it."""
    with open(path + ".lock", "w") as lock:  # flock: other workers, and this one's threads
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(path):
            partial = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            make(partial)
            os.replace(partial, path)
    return path


def _run_compiler(argv: list, what: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode:
        raise AssertionError(f"compiling {what} failed:\n{proc.stderr[-6000:]}")


def _compile(tc, out_dir: str, rel: str, emission, cache_dir) -> str:
    headers = emission.support_headers + ([emission.header] if rel in (emission.model_source,
                                                                      emission.id_source) else [])
    key = _content_key(tc, out_dir, [rel] + headers)
    if key not in _OBJECTS:
        src = os.path.join(out_dir, rel)
        # no part of the key: the object is the same with or without it
        prefix = (precompile_model_prefix(tc, out_dir, emission, cache_dir)
                  if rel == emission.model_source else [])
        _OBJECTS[key] = _once(os.path.join(str(cache_dir), key + ".o"), lambda partial: _run_compiler(
            tc.compile_command(src, partial, prefix_map=out_dir, seed=key[:16]) + prefix, rel))
    return _OBJECTS[key]


def precompile_kernel_header(tc, out_dir: str, emission, cache_dir) -> str | None:
    """The kernel header precompiled (g++ only) and linked beside the model's copy; its path."""
    if tc.host_prefix or KERNEL_HEADER not in emission.support_headers:
        return None
    return _precompile(tc, out_dir, KERNEL_HEADER, emission.support_headers, cache_dir)


def _precompile(tc, out_dir: str, rel: str, headers: list, cache_dir) -> str:
    """The header `rel` precompiled once per run for each command and the bytes of `headers`
    (those it reads), linked beside it as its .gch; the .gch's path."""
    key = _content_key(tc, out_dir, headers)
    header = os.path.join(out_dir, rel)

    def make(partial: str) -> None:
        _run_compiler(tc.precompile_command(header, partial), rel)

    pch = _once(os.path.join(str(cache_dir), key + ".gch"), make)
    link = header + ".gch"
    if os.path.lexists(link) and os.readlink(link) != pch:  # a folder emitted into again
        os.remove(link)
    if not os.path.lexists(link):
        os.symlink(pch, link)
    return link


MODEL_PREFIX = "src/ait_model_prefix.h"  # model.cpp's leading includes, precompiled


def model_prefix_lines(source: str) -> list:
    """The `#include` lines model.cpp begins with, up to its own model's header (`../NAME.h`,
    which differs per model); comments and blank lines between them are skipped."""
    lines = []
    with open(source, encoding="utf-8") as fh:
        for line in fh:
            text = line.strip()
            if not text or text.startswith("//"):
                continue
            if not text.startswith("#include") or '"../' in text:
                break
            lines.append(text)
    return lines


def precompile_model_prefix(tc, out_dir: str, emission, cache_dir) -> list:
    """`-include` of model.cpp's leading includes, precompiled (g++ only) once per run for each
    command and set of header bytes; [] where the kernel header is not among them."""
    lines = model_prefix_lines(os.path.join(out_dir, emission.model_source))
    if tc.host_prefix or f'#include "{os.path.basename(KERNEL_HEADER)}"' not in lines:
        return []
    header = os.path.join(out_dir, MODEL_PREFIX)
    with open(header, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    _precompile(tc, out_dir, MODEL_PREFIX, [MODEL_PREFIX] + emission.support_headers, cache_dir)
    return ["-include", header]


def build_library(tc, out_dir: str, emission, cache_dir) -> str:
    sources = emission.compiled_sources
    precompile_kernel_header(tc, out_dir, emission, cache_dir)
    with ThreadPoolExecutor(JOBS) as pool:
        objects = list(pool.map(lambda rel: _compile(tc, out_dir, rel, emission, cache_dir),
                                sources))
    lib = os.path.join(out_dir, f"lib{emission.name}.so")
    proc = subprocess.run(tc.link_command(objects, lib), capture_output=True, text=True)
    if proc.returncode:
        raise AssertionError(f"linking {lib} failed:\n{proc.stderr[-4000:]}")
    # the BLAS its `$ORIGIN` rpath finds, as a build places it (one copy kept in the cache)
    carry(tc.runtime_files, out_dir, os.path.join(str(cache_dir), "runtime"))
    return lib


class CModel:
    """The generated C API through ctypes, with the manifest's inputs, outputs and dims."""

    def __init__(self, out_dir: str, emission, lib_path: str, weights: str | None = None):
        import json
        with open(os.path.join(out_dir, "manifest.json")) as fh:
            self.manifest = json.load(fh)
        self.lib = ctypes.CDLL(lib_path)
        c = "ait_" + emission.name.replace("-", "_")
        self.create, self.run_fn = self.lib[c + "_create"], self.lib[c + "_run"]
        self.destroy, self.last_error = self.lib[c + "_destroy"], self.lib[c + "_last_error"]
        self.create.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        self.run_fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                ctypes.c_void_p]
        self.destroy.argtypes = [ctypes.c_void_p]
        self.last_error.restype = ctypes.c_char_p
        self.weights = weights or os.path.join(out_dir, "weights.safetensors")
        self.handle = ctypes.c_void_p()
        rc = self.create(self.weights.encode(), ctypes.byref(self.handle))
        assert rc == 0, self.error()

    def error(self) -> str:
        return self.last_error().decode()

    def close(self):
        if self.handle:
            self.destroy(self.handle)
            self.handle = ctypes.c_void_p()

    def shapes(self, entries, env):
        return [tuple(d if isinstance(d, int) else _eval(d, env) for d in e["shape"])
                for e in entries]

    def run(self, inputs: dict, dims: dict | None = None) -> dict:
        env = dict(dims or {})
        for e in self.manifest["inputs"]:  # input dims named plainly bind themselves
            for d, size in zip(e["shape"], inputs[e["name"]].shape):
                if isinstance(d, str) and d.isidentifier():
                    env.setdefault(d, size)
        arrays = [np.ascontiguousarray(inputs[e["name"]], dtype=NUMPY[e["dtype"]])
                  for e in self.manifest["inputs"]]
        outs = [np.full(s, np.nan if e["dtype"].startswith(("float", "bfloat")) else 0,
                        dtype=NUMPY[e["dtype"]])
                for e, s in zip(self.manifest["outputs"],
                                self.shapes(self.manifest["outputs"], env))]
        dim_vals = (ctypes.c_int64 * max(1, len(self.manifest["dims"])))(
            *[env[d["name"]] for d in self.manifest["dims"]])
        ins = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        outp = (ctypes.c_void_p * len(outs))(*[a.ctypes.data for a in outs])
        rc = self.run_fn(self.handle, dim_vals, ins, outp, None)
        assert rc == 0, self.error()
        return {e["name"]: a for e, a in zip(self.manifest["outputs"], outs)}


def _eval(expr: str, env: dict) -> int:
    return int(eval(expr, {"__builtins__": {}}, dict(env)))  # dim expressions: + and * over names


def write_spec(directory, name: str, inputs: dict, graph: list, outputs: list, dims=None,
               dtype: str = "float32") -> str:
    doc = {"apiVersion": "ait-build/v1", "kind": "Model", "name": name, "dtype": dtype,
           "dims": dims or {}, "inputs": inputs, "weights": {"random": {"seed": 0}},
           "graph": graph, "outputs": outputs}
    if not doc["dims"]:
        del doc["dims"]
    path = os.path.join(str(directory), f"{name}.yaml")
    with open(path, "w") as fh:
        yaml.safe_dump(doc, fh, sort_keys=False)
    return path


GROUP_DIMS = {"batch": {"min": 1, "max": 8, "opt": 3}}


def group_specs(tmp_path_factory, name: str, group: dict) -> dict:
    """dtype -> spec of an op group (tests/backends/family_ops.py) over GROUP_DIMS, in float32
    and float16."""
    return {dtype: write_spec(tmp_path_factory.mktemp(dtype), f"{name}_{dtype}", dims=GROUP_DIMS,
                              dtype=dtype, **group) for dtype in ("float32", "float16")}


def assert_matches_spec(model, spec: str, dtype: str, batches=(1, 5)) -> None:
    """A built library's outputs against the reference of the spec as written."""
    from ait_build.ops.reference import random_inputs, run_reference
    from ait_build.spec.model import load_model
    graph = load_model(spec)
    for batch in batches:
        inputs = random_inputs(graph, {"batch": batch}, seed=batch)
        got = model.run(inputs)
        for name, expected in run_reference(graph, inputs).items():
            np.testing.assert_allclose(got[name].astype(np.float32), expected,
                                       **tolerance(expected, dtype), err_msg=name)


def tolerance(ref: np.ndarray, dtype: str = "float32") -> dict:
    """rtol 1e-4 for float32; atol scaled to the output's magnitude, because a kernel's rounding
    error in a sum of many products is relative to the terms, not to a result that cancels to
    near zero. float16/bfloat16 outputs are rounded once more at the edge."""
    finite = ref[np.isfinite(ref)] if ref.dtype.kind == "f" else ref  # an inf or NaN matches
    scale = float(np.max(np.abs(finite))) if finite.size else 1.0  # exactly, not via atol
    rtol = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1.6e-2}.get(dtype, 0)
    return {"rtol": rtol, "atol": max(scale, 1.0) * rtol * 0.2 if rtol else 0}


def _cpuinfo(field: str) -> str:
    """The value of the first /proc/cpuinfo line of `field` ('' where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            line = next((line for line in fh if line.startswith(field)), "")
    except OSError:
        return ""
    return line.partition(":")[2].strip()


def cpu_vendor() -> str:
    """The CPU's vendor_id as /proc/cpuinfo lists it ('' where there is none)."""
    return _cpuinfo("vendor_id")


def cpu_flags() -> set:
    """The CPU's feature flags as /proc/cpuinfo lists them (empty where there is none)."""
    return set(_cpuinfo("flags").split())
