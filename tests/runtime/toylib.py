"""The toy library: toy_model.cpp built with g++ next to its manifest and weights."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOY_WEIGHTS = np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32)
TOY_MANIFEST = {
    "name": "toy", "target": "cpu", "backend": "cpu", "dtype": "float32",
    "dims": [{"name": "batch", "min": 1, "max": 64, "opt": 8},
             {"name": "seq", "min": 1, "max": 32, "opt": 4}],
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["batch", 4]},
               {"name": "tokens", "dtype": "int64", "shape": ["batch*seq"]}],
    "outputs": [{"name": "y", "dtype": "float32", "shape": ["batch", 4]},
                {"name": "count", "dtype": "float32", "shape": ["batch"]}],
    "kernels": [], "workspace_bytes": 0,
    "weights": {"file": "weights.safetensors", "sha256": "", "bytes": 16},
}


def build_toy(out: str) -> str:
    """Builds the toy model into `out` (a build directory) and returns it."""
    subprocess.run(["g++", "-O1", "-std=c++17", "-shared", "-fPIC", "-o",
                    os.path.join(out, "libtoy.so"), os.path.join(HERE, "toy_model.cpp")], check=True)
    with open(os.path.join(out, "manifest.json"), "w") as fh:
        json.dump(TOY_MANIFEST, fh)
    TOY_WEIGHTS.tofile(os.path.join(out, "weights.safetensors"))
    return out


def toy_expected(x: np.ndarray, tokens: np.ndarray) -> dict:
    batch = x.shape[0]
    return {"y": x * TOY_WEIGHTS, "count": tokens.reshape(batch, -1).sum(axis=1).astype(np.float32)}
