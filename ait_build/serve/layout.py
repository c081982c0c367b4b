"""How a built model looks to Triton: its tensors without the batch dim, and its batching, read
from the manifest alone (no PyTriton needed, so it is tested anywhere).

A model is served with dynamic batching when a dim named `batch` leads every input and every
output and appears nowhere else: Triton then concatenates requests along that axis, up to the
dim's max, and prefers batches of the dim's opt (the size its kernels were tuned for) and max.
Any other model is served as it is, one request per run, with its full shapes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ait_build.ir.dtypes import NUMPY
from ait_build.runtime.manifest import Manifest, ModelError, symbols

BATCH_DIM = "batch"
# dtypes Triton's Python backend carries as NumPy arrays (it has no NumPy bfloat16)
SERVABLE_DTYPES = ("float32", "float16", "int32", "int64", "bool")


@dataclass(frozen=True)
class TritonTensor:
    name: str
    dtype: np.dtype
    shape: tuple  # without the batch dim when batched; -1 for a dim the request's shape sets


@dataclass(frozen=True)
class Layout:
    name: str
    inputs: tuple  # TritonTensor
    outputs: tuple
    max_batch_size: int  # 0: no batching (Triton's meaning)
    preferred_batch_sizes: tuple
    unbatched_reason: str  # why a model is served without batching ("" when batched)

    @property
    def batched(self) -> bool:
        return self.max_batch_size > 0


def layout_of(manifest: Manifest) -> Layout:
    """The Triton view of a build; ModelError for a tensor Triton cannot carry."""
    for spec in manifest.inputs + manifest.outputs:
        if spec.dtype not in SERVABLE_DTYPES:
            raise ModelError(f"{manifest.name}: '{spec.name}' is {spec.dtype}, which Triton's "
                             f"Python backend does not carry; serve a build of "
                             f"{', '.join(SERVABLE_DTYPES)} tensors")
    reason = unbatched_reason(manifest)
    batch = next((d for d in manifest.dims if d.name == BATCH_DIM), None)
    drop = 0 if reason else 1
    tensors = [tuple(TritonTensor(t.name, NUMPY[t.dtype],
                                  tuple(d if isinstance(d, int) else -1 for d in t.shape[drop:]))
                     for t in group) for group in (manifest.inputs, manifest.outputs)]
    if reason:
        return Layout(manifest.name, tensors[0], tensors[1], 0, (), reason)
    preferred = tuple(sorted({batch.opt, batch.max} & set(range(max(1, batch.min), batch.max + 1))))
    return Layout(manifest.name, tensors[0], tensors[1], batch.max, preferred, "")


def unbatched_reason(manifest: Manifest) -> str:
    """Why requests of this model cannot be concatenated along a batch axis ("" if they can)."""
    if BATCH_DIM not in manifest.dim_names:
        return f"it has no '{BATCH_DIM}' dim"
    for spec in manifest.inputs + manifest.outputs:
        if not spec.shape or spec.shape[0] != BATCH_DIM:
            return f"'{spec.name}' {spec.shape_text()} does not lead with '{BATCH_DIM}'"
        if any(BATCH_DIM in symbols(d) for d in spec.shape[1:]):
            return f"'{spec.name}' {spec.shape_text()} uses '{BATCH_DIM}' past its first axis"
    return ""

