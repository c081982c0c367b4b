"""The toy library: toy_model.cpp built with g++ next to its manifest and weights."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import numpy as np

from ait_build.codegen.digest import digest_line, json_sha256, sha256_file

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
