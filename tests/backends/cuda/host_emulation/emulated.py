"""A cuda model's sources built with g++ into a host library that runs its kernels on the CPU
(prelude.h: CUDA's built-ins as thread-locals, one std::thread per GPU thread of a block;
runtime.cpp: host memory as device memory, no graphs), so the GPU layer's own kernels can be
checked for indexing, bounds and alignment fallbacks where there is no GPU. CUTLASS kernels
cannot be built so: a spec run whole this way must use the GPU layer's own templates only; of
any other, `build_kernels` builds some own kernels with a driver that calls them."""

from __future__ import annotations

import ctypes
import glob
import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCH = re.compile(r"([A-Za-z_][\w:]*(?:<[^<>;]*>)?)\s*<<<(.*?)>>>\s*\(", re.S)


def cuda_include() -> str | None:
    """The CUDA toolkit's include folder (cuda_runtime.h, cuda_fp16.h), if installed."""
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "include", "cuda_runtime.h")):
            return os.path.join(root, "include")
    return None


def host_source(text: str) -> str:
    """`kernel<<<grid, block, smem, stream>>>(args)` -> `emu::launch(kernel, grid, ..., args)`."""
    return LAUNCH.sub(lambda m: f"emu::launch({m.group(1)}, {m.group(2)}, ", text)


def build(out_dir: str, name: str, workers: int = 2) -> str:
    """Compiles an emitted cuda model (out_dir/src) for the host; returns the library's path."""
    src = os.path.join(out_dir, "src")
    sources = sorted(glob.glob(os.path.join(src, "*.cu"))) + [os.path.join(src, "model.cpp")]
    return _library(out_dir, f"lib{name}.so", sources, [os.path.join(src, "build_id.cpp")], workers)


def build_kernels(out_dir: str, kernels: list, driver: str, workers: int = 2) -> str:
    """Compiles some kernels of an emitted cuda model (plan Kernels, each src/<name>.cu) with a
    driver (C++ text calling them, its functions extern "C") into a host library."""
    driver_path = os.path.join(out_dir, "host_driver.cpp")
    with open(driver_path, "w") as fh:
        fh.write(driver)
    sources = [os.path.join(out_dir, k.source) for k in kernels]
    return _library(out_dir, "libkernels.so", sources, [driver_path], workers)


def _library(out_dir: str, lib_name: str, sources: list, plain: list, workers: int) -> str:
    """`sources` (launches rewritten for the host) and `plain` C++ files, with the emulated
    runtime, built into out_dir/host/<lib_name>."""
    src = os.path.join(out_dir, "src")
    host_dir = os.path.join(out_dir, "host")
    os.makedirs(host_dir, exist_ok=True)
    jobs = []
    # the kernel header launches too (ait::launch): rewritten copies beside the sources, which
    # find them before src's
    for path in glob.glob(os.path.join(src, "*.h")):
        with open(path) as fh:
            text = fh.read()
        with open(os.path.join(host_dir, os.path.basename(path)), "w") as fh:
            fh.write(host_source(text))
    for path in sources + plain + [os.path.join(HERE, "runtime.cpp")]:
        host = os.path.join(host_dir, os.path.basename(path) + ".cpp")
        with open(path) as fh:
            text = fh.read()
        with open(host, "w") as fh:
            fh.write(host_source(text) if path in sources else text)
        jobs.append(["g++", "-std=c++20", "-O1", "-fPIC", "-w", "-include",
                     os.path.join(HERE, "prelude.h"), "-I" + cuda_include(), "-I" + src, "-c",
                     host, "-o", host + ".o"])

    def compile_one(cmd):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            raise AssertionError(f"{' '.join(cmd)}\n{proc.stderr[-6000:]}")

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(compile_one, jobs))
    lib = os.path.join(host_dir, lib_name)
    # -Bsymbolic: the emulated runtime's cuda* functions, even where a real libcudart is loaded
    # (torch imported in the same process)
    subprocess.run(["g++", "-shared", "-Wl,-Bsymbolic", "-o", lib] + [cmd[-1] for cmd in jobs]
                   + ["-lpthread"], check=True)
    return lib


class HostModel:
    """The built library through its C API, on NumPy arrays (host memory is device memory)."""

    def __init__(self, out_dir: str, lib: str):
        with open(os.path.join(out_dir, "manifest.json")) as fh:
            self.manifest = json.load(fh)
        self.lib = ctypes.CDLL(lib)
        c = self.manifest["c_name"]
        self.run_fn = self.lib[f"{c}_run"]
        self.last_error = self.lib[f"{c}_last_error"]
        self.last_error.restype = ctypes.c_char_p
        self.handle = ctypes.c_void_p()
        weights = os.path.join(out_dir, "weights.safetensors").encode()
        if self.lib[f"{c}_create"](weights, ctypes.byref(self.handle)):
            raise AssertionError(self.last_error().decode())

    def run(self, inputs: dict, dims: dict, out_shapes: dict, shifted: bool = False) -> dict:
        """`shifted`: every input and output starts one element past an aligned address (the
        kernels' unaligned fallbacks)."""
        from ait_build.ir.dtypes import NUMPY
        m = self.manifest
        place = _shifted if shifted else np.ascontiguousarray
        ins = [place(inputs[i["name"]]) for i in m["inputs"]]
        outs = {o["name"]: place(np.zeros(out_shapes[o["name"]], NUMPY[o["dtype"]]))
                for o in m["outputs"]}
        d = (ctypes.c_int64 * max(len(m["dims"]), 1))(*[dims[x["name"]] for x in m["dims"]])
        ip = (ctypes.c_void_p * len(ins))(*[a.ctypes.data for a in ins])
        op = (ctypes.c_void_p * len(outs))(*[a.ctypes.data for a in outs.values()])
        if self.run_fn(self.handle, d, ip, op, None):
            raise AssertionError(self.last_error().decode())
        return outs


def _shifted(array: np.ndarray) -> np.ndarray:
    """A copy of `array` starting one element into a fresh (aligned) buffer."""
    buf = np.empty(array.size + 1, array.dtype)
    out = buf[1:].reshape(array.shape)
    out[...] = array
    return out
