"""How the ATen handlers (torch_ops.py, torch_layers.py, torch_scans.py) and the translator
(from_torch.py) read an FX node."""

from __future__ import annotations


def arg(node, index: int, name: str, default=None):
    """The node's argument at `index`, or its keyword `name`, or `default`."""
    if index < len(node.args):
        return node.args[index]
    return node.kwargs.get(name, default)


def key(node) -> str:
    """The ATen op's name, 'aten.conv2d.default'."""
    return str(node.target)


def empty(node) -> bool:
    """Whether an FX node (or argument) is a tensor of no elements: a size of 0 known at import.
    Such tensors are not translated (the spec has no empty tensors); torch.cat leaves them out."""
    val = getattr(node, "meta", {}).get("val")
    return any(isinstance(s, int) and s == 0 for s in getattr(val, "shape", ()))
