"""Weights: read from a safetensors file or filled by a seeded random init, kept as float32 for
the reference executor, overridable by passes (folded batch norm, packed QKV) without touching the
source. Never pickle.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from ait_build.errors import AitError
from ait_build.files.read import not_safetensors
from ait_build.ir.dtypes import NUMPY, SAFETENSORS, is_float

FLOAT_STORAGE = ("F16", "BF16", "F32", "F64")  # safetensors dtypes a float weight may come in

# a tensor's random init is drawn from a generator seeded by (seed, name): adding a layer never
# changes another layer's weights


def _rng(seed: int, name: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def random_init(init: str, shape: tuple, seed: int, name: str) -> np.ndarray:
    """Values for one weight. `init` is 'fan_in:N', 'bias:N', 'ones', 'zeros', 'small',
    'variance' or 'normal' (see the ops' ParamSpec)."""
    rng = _rng(seed, name)
    kind, _, arg = init.partition(":")
    if kind == "fan_in":  # LeCun normal keeps activations O(1) through deep stacks
        out = rng.standard_normal(shape) / np.sqrt(float(arg))
    elif kind == "bias":
        bound = 1.0 / np.sqrt(float(arg))
        out = rng.uniform(-bound, bound, shape)
    elif kind == "ones":
        out = 1.0 + 0.1 * rng.standard_normal(shape)
    elif kind == "zeros":
        out = np.zeros(shape)
    elif kind == "small":
        out = 0.1 * rng.standard_normal(shape)
    elif kind == "variance":
        out = rng.uniform(0.5, 1.5, shape)
    elif kind == "normal":
        out = 0.02 * rng.standard_normal(shape) if len(shape) >= 2 else rng.standard_normal(shape)
    else:
        raise ValueError(f"unknown init '{init}'")
    return out.astype(np.float32)


class WeightStore:
    """name -> float32 array, loaded lazily. `overrides` hold arrays computed by passes."""

    def __init__(self, path: str | None = None, seed: int | None = None, specs: dict | None = None):
        self.path = path  # safetensors file, or None for random init
        self.seed = seed  # with a path: weights the file lacks are drawn with this seed
        self.specs = dict(specs or {})  # name -> (concrete shape tuple, init)
        self.overrides: dict = {}
        self._cache: dict = {}
        self._file_keys = None

    def fork(self) -> "WeightStore":
        clone = WeightStore(self.path, self.seed, self.specs)
        clone.overrides = dict(self.overrides)
        clone._cache = self._cache  # source values never change; sharing them is safe
        clone._file_keys = self._file_keys
        return clone

    def file_keys(self) -> set:
        if self._file_keys is None:
            from safetensors import safe_open
            try:
                with safe_open(self.path, framework="numpy") as f:
                    self._file_keys = set(f.keys())
            except Exception as exc:  # safetensors raises several error types for bad files
                raise AitError(not_safetensors(self.path, "weights:", "the model's weights",
                                               "weights.safetensors")
                               or f"{self.path}: cannot read safetensors file: {exc}") from None
        return self._file_keys

    def set(self, name: str, value: np.ndarray, init: str = "computed") -> None:
        # (np.ascontiguousarray would make a rank-0 array, a scalar parameter, rank 1)
        self.overrides[name] = np.asarray(value, dtype=np.float32 if value.dtype.kind == "f"
                                          else value.dtype, order="C")
        self.specs[name] = (tuple(value.shape), init)

    def __contains__(self, name: str) -> bool:
        return name in self.overrides or name in self.specs

    def get(self, name: str) -> np.ndarray:
        if name in self.overrides:
            return self.overrides[name]
        if name not in self._cache:
            self._cache[name] = self._load(name)
        return self._cache[name]

    def _load(self, name: str) -> np.ndarray:
        shape, init = self.specs[name]
        if self.path is None or (self.seed is not None and name not in self.file_keys()):
            return random_init(init, shape, self.seed or 0, name)
        if name not in self.file_keys():
            raise AitError(f"{self.path}: no tensor named '{name}'")
        from safetensors import safe_open
        with safe_open(self.path, framework="numpy") as f:
            try:
                if f.get_slice(name).get_dtype() == "BF16":  # a bfloat16 checkpoint
                    NUMPY["bfloat16"]  # NumPy knows bfloat16 once ml_dtypes is imported
                value = f.get_tensor(name)
            except Exception as exc:
                raise AitError(f"{self.path}: cannot read tensor '{name}': {exc}") from None
        if tuple(value.shape) != tuple(shape):
            raise AitError(f"{self.path}: tensor '{name}' has shape {list(value.shape)}, "
                           f"the spec needs {list(shape)}")
        return value.astype(np.float32) if value.dtype.kind == "f" or str(value.dtype) == "bfloat16" \
            else value

    def check_file(self, dtypes: dict) -> list:
        """Problems with the safetensors file against the spec: missing names, wrong shapes and
        wrong kinds of dtype (`dtypes`: name -> the spec's dtype). A float weight may be stored
        in any float dtype (converted as a checkpoint is); an integer or bool tensor is never
        taken for a float one, nor the other way round: that cast would change the values."""
        from safetensors import safe_open
        problems = []
        keys = self.file_keys()
        with safe_open(self.path, framework="numpy") as f:
            for name, (shape, _) in sorted(self.specs.items()):
                if name not in keys:
                    if self.seed is None:  # else drawn at random
                        problems.append(f"missing tensor '{name}' (shape {list(shape)})")
                    continue
                piece = f.get_slice(name)
                got = tuple(piece.get_shape())
                if got != tuple(shape):
                    problems.append(f"tensor '{name}' has shape {list(got)}, the spec needs {list(shape)}")
                stored, wanted = piece.get_dtype(), dtypes.get(name, "float32")
                if not _fits(stored, wanted):
                    problems.append(f"tensor '{name}' is stored as {stored}, the spec needs "
                                    f"{'a float type' if is_float(wanted) else SAFETENSORS[wanted]}")
        return problems


def _fits(stored: str, wanted: str) -> bool:
    """Whether a safetensors dtype may hold the values of a weight of dtype `wanted`."""
    if is_float(wanted):
        return stored in FLOAT_STORAGE
    return stored == SAFETENSORS[wanted]


def safetensors_bytes(arrays: dict, metadata: dict | None = None) -> bytes:
    """A safetensors file's bytes (arrays sorted by name), for files/output.py to write: it writes
    a device in place, where safetensors' save_file would replace it with a regular file."""
    from safetensors.numpy import save
    return save({k: np.asarray(arrays[k], order="C") for k in sorted(arrays)}, metadata=metadata)


def save_safetensors(arrays: dict, path: str, metadata: dict | None = None) -> None:
    """Write arrays (sorted by name, so the file is reproducible) to a safetensors file."""
    from safetensors.numpy import save_file
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    save_file({k: np.asarray(arrays[k], order="C") for k in sorted(arrays)}, path,
              metadata=metadata)
