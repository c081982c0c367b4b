"""Kernel signatures: a key per node built from what its generated code would depend on (op,
attributes, input/output/weight dtypes and shapes, symbolic dims by name), never from its name.
`ait-build graph` and bench/passes_report.py count distinct keys at any stage, to show what each
pass buys: ResNet-50's 16 bottlenecks need far fewer than 53 conv kernels, and every BERT layer
has the first layer's signatures.

This is a report, not a pass: code generation deduplicates kernels by their rendered identity
(codegen/kernel.py), which merges at least as much, since sizes are run-time arguments.

The key reads `<op>[_<activation>]_<hash8>`, so file names stay short and still say what they
hold. `parameter` nodes read a weight in place and get no kernel.
"""

from __future__ import annotations

import hashlib
import json

from ait_build.ir.dims import shape_str
from ait_build.ir.graph import Graph, Node

NO_KERNEL = ("parameter",)


def _canon(value):
    """Attribute values as JSON-stable data (Dims print by name: 'batch', '2*batch')."""
    if isinstance(value, (tuple, list)):
        return [_canon(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in sorted(value.items())}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


def signature(graph: Graph, node: Node) -> dict:
    def ttype(name):
        t = graph.tensors[name]
        return [t.dtype, shape_str(t.shape)]

    return {
        "op": node.op,
        "attrs": _canon({k: v for k, v in node.attrs.items() if not k.startswith("_")}),
        "inputs": [ttype(t) for t in node.inputs],
        "outputs": [ttype(t) for t in node.outputs],
        "weights": {role: ttype(w) for role, w in sorted(node.weights.items())},
    }


def kernel_key(graph: Graph, node: Node) -> str:
    if node.op in NO_KERNEL:
        return ""
    text = json.dumps(signature(graph, node), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    act = node.attrs.get("activation", "none")
    return f"{node.op}_{act}_{digest}" if act != "none" else f"{node.op}_{digest}"


def unique_kernels(graph: Graph, keys=None) -> int:
    keys = keys if keys is not None else [kernel_key(graph, n) for n in graph.nodes]
    return len({k for k in keys if k})
