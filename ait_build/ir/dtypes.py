"""Data types a spec may name, with their NumPy storage types and sizes."""

from __future__ import annotations

import ml_dtypes
import numpy as np

FLOAT_DTYPES = ("float32", "float16", "bfloat16")
INT_DTYPES = ("int32", "int64")
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)

NUMPY = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "bool": np.dtype(np.bool_),
}

ITEMSIZE = {name: dt.itemsize for name, dt in NUMPY.items()}

# safetensors' names for our dtypes
SAFETENSORS = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "int32": "I32",
               "int64": "I64", "bool": "BOOL"}


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def from_numpy(dt) -> str | None:
    dt = np.dtype(dt)
    for name, candidate in NUMPY.items():
        if candidate == dt:
            return name
    return None
