"""Data types a spec may name, with their NumPy storage types and sizes."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

FLOAT_DTYPES = ("float32", "float16", "bfloat16")
# the 16-bit floats: what tensor cores take with whole 16-byte vectors of 8 elements
HALF_DTYPES = ("float16", "bfloat16")
INT_DTYPES = ("int32", "int64")
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)


class NumpyTypes(Mapping):
    """Our dtype names -> NumPy dtypes. bfloat16's is ml_dtypes', imported when first asked for:
    that import is most of a command's start-up (every `ait-build` and `scons` run), and most
    runs never meet a bfloat16 tensor."""

    PLAIN = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
             "int32": np.dtype(np.int32), "int64": np.dtype(np.int64), "bool": np.dtype(np.bool_)}

    def __getitem__(self, name: str) -> np.dtype:
        if name == "bfloat16":
            import ml_dtypes
            return np.dtype(ml_dtypes.bfloat16)
        return self.PLAIN[name]

    def __iter__(self):
        return iter(ALL_DTYPES)

    def __len__(self) -> int:
        return len(ALL_DTYPES)


NUMPY = NumpyTypes()

ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8, "bool": 1}

# safetensors' names for our dtypes
SAFETENSORS = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "int32": "I32",
               "int64": "I64", "bool": "BOOL"}


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def dtype_mismatch(what: str, dtype, expected: str) -> str:
    """Why an array of NumPy `dtype` cannot be `what` (e.g. "input 'x'") of dtype `expected`;
    '' when it can. Nothing casts silently: a cast costs a copy, and precision or (for indices)
    values the caller did not choose."""
    if dtype == NUMPY[expected]:
        return ""
    got = (from_numpy(dtype) or str(dtype)) if dtype is not None else "a dtype NumPy lacks"
    return (f"{what} is {got}; the model expects {expected} (convert with .astype(...); "
            "ait-build does not cast silently)")


def from_numpy(dt) -> str | None:
    dt = np.dtype(dt)
    if dt.name == "bfloat16":  # ml_dtypes' (then it is imported already)
        return "bfloat16" if dt == NUMPY["bfloat16"] else None
    return next((name for name, candidate in NumpyTypes.PLAIN.items() if candidate == dt), None)
