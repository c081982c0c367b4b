"""How the ATen handlers (torch_ops.py, torch_layers.py, torch_scans.py) read an FX node."""

from __future__ import annotations


def arg(node, index: int, name: str, default=None):
    """The node's argument at `index`, or its keyword `name`, or `default`."""
    if index < len(node.args):
        return node.args[index]
    return node.kwargs.get(name, default)


def key(node) -> str:
    """The ATen op's name, 'aten.conv2d.default'."""
    return str(node.target)
