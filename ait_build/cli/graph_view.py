"""Views of a graph for people and tools: text, JSON, Graphviz dot (and SVG/PNG through `dot`)."""

from __future__ import annotations

import json
import shutil
import subprocess

from ait_build.errors import AitError
from ait_build.ir.dims import shape_str
from ait_build.ir.graph import WEIGHT, Graph


def _attrs_text(attrs: dict) -> str:
    parts = []
    for k, v in attrs.items():
        if k.startswith("hardtanh_") and attrs.get("activation") != "hardtanh" or \
                k == "leaky_slope" and attrs.get("activation") != "leaky_relu":
            continue  # an epilogue's parameters mean nothing for its other activations
        if isinstance(v, tuple) and v and not isinstance(v[0], (int, float, str)):
            v = shape_str(v)
        parts.append(f"{k}={v}")
    return ", ".join(parts)


def to_text(graph: Graph, extra: dict | None = None) -> str:
    lines = [f"model {graph.name} ({graph.dtype}), {len(graph.nodes)} nodes"]
    for name, r in graph.dims.items():
        lines.append(f"  dim {name}: [{r.min}, {r.max}], opt {r.opt}")
    for name in graph.inputs:
        lines.append(f"  input  {graph.tensors[name]}")
    for n in graph.nodes:
        outs = ", ".join(str(graph.tensors[t]) for t in n.outputs)
        ins = ", ".join(n.inputs)
        weights = ", ".join(f"{r}={w}" for r, w in n.weights.items())
        attrs = _attrs_text(n.attrs)
        lines.append(f"  {n.name} = {n.op}({ins})" + (f" [{attrs}]" if attrs else "")
                     + (f" weights {{{weights}}}" if weights else "") + f" -> {outs}")
    lines.append("  outputs: " + ", ".join(graph.outputs))
    for key, value in (extra or {}).items():
        lines.append(f"{key}: {value}")
    return "\n".join(lines) + "\n"


def _jsonable(value):
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "to_json"):
        return value.to_json()
    return value


def to_json(graph: Graph, extra: dict | None = None) -> str:
    tensors = graph.tensors
    data = {
        "name": graph.name,
        "dtype": graph.dtype,
        "dims": {n: {"min": r.min, "max": r.max, "opt": r.opt} for n, r in graph.dims.items()},
        "inputs": [{"name": t, "shape": _jsonable(tensors[t].shape), "dtype": tensors[t].dtype}
                   for t in graph.inputs],
        "outputs": [{"name": t, "shape": _jsonable(tensors[t].shape), "dtype": tensors[t].dtype}
                    for t in graph.outputs],
        "nodes": [{
            "name": n.name, "op": n.op, "inputs": list(n.inputs), "outputs": list(n.outputs),
            "attrs": {k: _jsonable(v) for k, v in n.attrs.items()},
            "weights": dict(n.weights),
            "input_shapes": [_jsonable(tensors[t].shape) for t in n.inputs],
            "output_shapes": [_jsonable(tensors[t].shape) for t in n.outputs],
            "location": str(n.loc),
        } for n in graph.nodes],
        "op_counts": graph.op_counts(),
        "weights": len([t for t in tensors.values() if t.kind == WEIGHT]),
    }
    data.update(extra or {})
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph: Graph) -> str:
    lines = [f"digraph {_q(graph.name)} {{", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="Helvetica"];']
    producer = graph.producers()
    for name in graph.inputs:
        lines.append(f"  {_q('in:' + name)} [label={_q(name + chr(10) + shape_str(graph.tensors[name].shape))}, "
                     'shape=ellipse, fillcolor="#e4f5e4"];')
    for n in graph.nodes:
        label = f"{n.name}\n{n.op}"
        if n.attrs.get("activation", "none") != "none":
            label += f" +{n.attrs['activation']}"
        label += "\n" + shape_str(graph.tensors[n.outputs[0]].shape)
        lines.append(f"  {_q(n.name)} [label={_q(label)}];")
        for t in n.inputs:
            src = producer[t].name if t in producer else "in:" + t
            lines.append(f"  {_q(src)} -> {_q(n.name)};")
    for t in graph.outputs:
        lines.append(f"  {_q('out:' + t)} [label={_q(t)}, shape=ellipse, fillcolor=\"#fbeee4\"];")
        lines.append(f"  {_q(producer[t].name)} -> {_q('out:' + t)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


DOT_TIMEOUT_S = 120


def render_image(dot_text: str, fmt: str) -> bytes:
    exe = shutil.which("dot")
    if exe is None:
        raise AitError(f"--format {fmt} needs Graphviz's 'dot' program (apt-get install graphviz); "
                       "--format dot writes the source without it")
    try:
        proc = subprocess.run([exe, f"-T{fmt}"], input=dot_text.encode(), capture_output=True,
                              timeout=DOT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise AitError(f"dot ({exe}) gave no {fmt} in {DOT_TIMEOUT_S} s; --format dot writes "
                       "the source without it") from None
    if proc.returncode != 0:
        raise AitError(f"dot failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout
