"""The toy library: toy_model.cpp built with g++ next to its manifest and weights; and a CUDA
runtime over host memory that lets it stand in for a cuda build."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import subprocess

import numpy as np

from ait_build.codegen.digest import digest_line, json_sha256, sha256_file
from ait_build.runtime import cuda

HERE = os.path.dirname(os.path.abspath(__file__))
TOY_WEIGHTS = np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32)
TOY_MANIFEST = {
    "name": "toy", "c_name": "ait_toy", "target": "cpu", "backend": "cpu", "device": "host",
    "dtype": "float32",
    "dims": [{"name": "batch", "min": 1, "max": 64, "opt": 8},
             {"name": "seq", "min": 1, "max": 32, "opt": 4}],
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["batch", 4]},
               {"name": "tokens", "dtype": "int64", "shape": ["batch*seq"]}],
    "outputs": [{"name": "y", "dtype": "float32", "shape": ["batch", 4]},
                {"name": "count", "dtype": "float32", "shape": ["batch"]}],
    "kernels": [], "workspace_bytes": 0,
    "weights": {"file": "weights.safetensors", "bytes": 16,
                "sha256": hashlib.sha256(TOY_WEIGHTS.tobytes()).hexdigest()},
}
TOY_MANIFEST["build_id"] = json_sha256(TOY_MANIFEST)


def build_toy(out: str, **fields) -> str:
    """Builds the toy model into `out` (a build directory) as a build does: the library returns
    the manifest's build_id and its hash is recorded beside it. `fields` replace manifest fields
    (target="h200", backend="cuda", device="cuda": a cuda build's manifest), the build_id
    following them. Returns `out`."""
    manifest = dict(TOY_MANIFEST, **fields)
    manifest.pop("build_id")
    manifest["build_id"] = json_sha256(manifest)
    library = os.path.join(out, "libtoy.so")
    subprocess.run(["g++", "-O1", "-std=c++17", "-shared", "-fPIC",
                    f"-DTOY_BUILD_ID=\"{manifest['build_id']}\"", "-o", library,
                    os.path.join(HERE, "toy_model.cpp")], check=True)
    with open(library + ".sha256", "w") as fh:
        fh.write(digest_line(sha256_file(library), "libtoy.so"))
    with open(os.path.join(out, "manifest.json"), "w") as fh:
        json.dump(manifest, fh)
    TOY_WEIGHTS.tofile(os.path.join(out, "weights.safetensors"))
    return out


def toy_expected(x: np.ndarray, tokens: np.ndarray) -> dict:
    batch = x.shape[0]
    return {"y": x * TOY_WEIGHTS, "count": tokens.reshape(batch, -1).sum(axis=1).astype(np.float32)}


class HostRuntime:
    """CudaRuntime's interface over host memory, counting copies, with `devices` GPUs: which
    device was current at each allocation and free (`events`)."""

    def __init__(self, devices: int = 1):
        self.buffers, self.copies, self.events = {}, [], []
        self.devices, self.current = devices, 0

    def device_count(self) -> int:
        return self.devices

    def get_device(self) -> int:
        return self.current

    def set_device(self, device: int) -> None:
        assert 0 <= device < self.devices, device
        self.current = device

    def pointer_device(self, ptr: int) -> int:
        return self.buffers[ptr][1]

    def malloc(self, nbytes: int) -> int:
        buf = np.zeros(max(1, nbytes), np.uint8)
        self.buffers[buf.ctypes.data] = (buf, self.current)
        self.events.append(("malloc", self.current))
        return buf.ctypes.data

    def free(self, ptr: int) -> None:
        _, device = self.buffers.pop(ptr)  # (free runs in __del__: an assert would go unseen)
        self.events.append(("free", self.current) if device == self.current
                           else ("free on another device", self.current))

    def to_device(self, array, device=None):
        self.copies.append("in")
        out = cuda.DeviceArray.empty(self, array.shape, array.dtype, device)
        ctypes.memmove(out.ptr, np.ascontiguousarray(array).ctypes.data, array.nbytes)
        return out

    def to_host(self, array):
        self.copies.append("out")
        out = np.empty(array.shape, array.dtype)
        ctypes.memmove(out.ctypes.data, array.ptr, out.nbytes)
        return out

    def synchronize(self, stream: int = 0) -> None:
        self.events.append(("synchronize", self.current))
