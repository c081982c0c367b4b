"""weights.safetensors as the generated library reads it.

The file is plain safetensors (any safetensors reader opens it), written by us so its bytes are
reproducible: tensors in sorted-name order, packed, a compact sorted JSON header padded to 8
bytes. The header depends only on names, dtypes and shapes, so the library can be generated
before the values exist; it embeds the header's length and FNV-1a hash and refuses a file whose
header differs or whose length is not exactly header + data.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

import numpy as np

from ait_build.ir.dtypes import ITEMSIZE, SAFETENSORS

ARENA_ALIGN = 64


@dataclass(frozen=True)
class Entry:
    key: str
    var: str
    ctype: str
    shape: tuple
    nbytes: int
    file_offset: int  # in the data section
    arena_offset: int  # in the library's aligned weights arena


@dataclass(frozen=True)
class WeightsLayout:
    header: bytes  # the 8-byte length prefix excluded
    entries: tuple  # Entry, in file order
    data_len: int
    arena_bytes: int

    @property
    def header_hash(self) -> int:
        return fnv1a64(self.header)


def fnv1a64(data: bytes) -> int:
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def layout(slots: dict, metadata: dict, ctypes: dict) -> WeightsLayout:
    """`slots`: key -> plan.WeightSlot; `ctypes`: dtype -> the C++ type the library reads it as
    (the backend's storage types). Offsets and the header, without touching values."""
    header: dict = {"__metadata__": dict(sorted(metadata.items()))}
    entries = []
    offset = arena = 0
    for key in sorted(slots):
        slot = slots[key]
        count = 1
        for d in slot.shape:
            count *= int(d)
        nbytes = count * ITEMSIZE[slot.dtype]
        header[key] = {"dtype": SAFETENSORS[slot.dtype], "shape": [int(d) for d in slot.shape],
                       "data_offsets": [offset, offset + nbytes]}
        entries.append(Entry(key, slot.var, ctypes[slot.dtype], tuple(slot.shape), nbytes, offset,
                             arena))
        offset += nbytes
        arena += (nbytes + ARENA_ALIGN - 1) // ARENA_ALIGN * ARENA_ALIGN
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
    text += b" " * (-len(text) % 8)
    return WeightsLayout(text, tuple(entries), offset, arena)


def file_bytes(wl: WeightsLayout, arrays: dict) -> bytes:
    """The whole file: length prefix, header, then each array's bytes in file order."""
    parts = [struct.pack("<Q", len(wl.header)), wl.header]
    for e in wl.entries:
        data = np.ascontiguousarray(arrays[e.key]).tobytes()
        if len(data) != e.nbytes:
            raise ValueError(f"weight '{e.key}' has {len(data)} bytes, expected {e.nbytes}")
        parts.append(data)
    return b"".join(parts)
