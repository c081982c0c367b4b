"""The op registry: every op's row (ops/opdef.py), by name. Importing a category module registers
its rows, so this module imports them all; code that looks an op up imports this module."""

from __future__ import annotations

from ait_build.ops import (attention, constant, conv, elementwise, embedding, linear,  # noqa: F401
                           logic, norm, resize, shape)
from ait_build.ops import fused  # noqa: F401  (internal ops the passes create)
from ait_build.ops.opdef import OPS, OpDef


def get_op(name: str) -> OpDef:
    return OPS[name]


def all_ops() -> dict:
    return OPS
