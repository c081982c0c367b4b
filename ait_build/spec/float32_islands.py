"""A float32 spec's explicit float32 computations, kept when a copy of it computes in float16.

An imported spec is float32, the dtype of the module it came from. Some modules compute a part
in float32 whatever their dtype: rotary position embeddings (LLaMA, Mistral, Qwen: the position
ids cast to float32, times `inv_freq.float()`, then `cos.to(x.dtype)`). At float32 the `.float()`
of a float32 buffer and the `.to(x.dtype)` back are no-ops, so the exported graph has only the
cast of the integer position ids to float32; a float16 copy of the spec (`--dtype float16`) then
multiplies that float32 value by a float16 parameter, which the spec language refuses (mixed
dtypes need a cast).

This module puts the two lost casts back into the copy, as PyTorch runs the module in float16:
a float32 *island* starts at a cast of a non-float value to float32 and grows through every op
that reads it; where it meets a model parameter (or a value computed from parameters alone),
the parameter is cast up to float32; where it meets an activation, the island's value is cast
down to the model's dtype, at the last value the spec's top-level graph names before that (a
block's input: the cos and sin a decoder layer takes). Where an island meets an activation
inside a block whose input it is not, nothing is added and the copy's error stands.
"""

from __future__ import annotations

from ait_build.ir.graph import Graph

FLOATS = ("float16", "bfloat16", "float32")
# ops that only move or view their one input: an island's value keeps its identity through them
MOVES = ("reshape", "permute", "transpose", "slice", "expand", "unsqueeze", "squeeze", "flatten",
         "concat", "repeat")


def _islands(graph: Graph) -> tuple:
    """(float32 values of islands, values computed from parameters and constants alone). An
    island grows through ops that read only it and parameters; an op where it meets an
    activation computes in the model's dtype (the island is cast down before it)."""
    island, const = set(), set()
    for node in graph.nodes:
        ins = node.inputs
        floats = [t for t in ins if graph.tensors[t].dtype in FLOATS]
        if node.op == "cast" and node.attrs.get("dtype") == "float32" and ins \
                and graph.tensors[ins[0]].dtype not in FLOATS:
            island.update(node.outputs)
        elif any(t in island for t in ins):
            if all(t in island or t in const for t in floats):
                island.update(t for t in node.outputs if graph.tensors[t].dtype == "float32")
        elif all(t in const for t in ins):  # parameters, constants, and what only they feed
            const.update(node.outputs)
    return island, const


def _named_source(tensor: str, top: set, producer: dict) -> str | None:
    """The top-level node whose value `tensor` is, or is a move of; None if none."""
    while True:
        node = producer.get(tensor)
        if node is None:
            return None
        if node.name in top and len(node.outputs) == 1:
            return node.name
        if node.op not in MOVES or len(node.inputs) != 1:
            return None
        tensor = node.inputs[0]


def boundaries(graph: Graph, top: set) -> tuple:
    """(top-level values to cast down to the model's dtype, {top-level node: its parameter
    inputs to cast up to float32}) of a float32 graph, by the names the spec gives them; `top`
    names the top-level nodes."""
    island, const = _islands(graph)
    producer = {t: n for n in graph.nodes for t in n.outputs}
    down, up = set(), {}
    for node in graph.nodes:
        floats = [t for t in node.inputs if graph.tensors[t].dtype in FLOATS]
        ours = [t for t in floats if t in island]
        if not ours or len(ours) == len(floats):
            continue
        others = [t for t in floats if t not in island]
        if all(t in const for t in others):
            named = [_named_source(t, top, producer) for t in others]
            if node.name in top and None not in named:
                casts = up.setdefault(node.name, [])
                casts.extend(n for n in named if n not in casts)
            continue
        for t in ours:
            named = _named_source(t, top, producer)
            if named is not None:
                down.add(named)
    return down, up


def add_casts(doc: dict, graph: Graph, dtype: str) -> int:
    """Edits a spec document (computing in `dtype` now, `graph` its float32 form) with the casts
    that keep its float32 islands; returns how many it added."""
    entries = doc.get("graph", [])
    top = {e["name"] for e in entries if isinstance(e, dict) and "op" in e and "name" in e}
    down, up = boundaries(graph, top)
    out, added = [], 0
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else None
        if name in up and "inputs" in entry:
            inputs = list(entry["inputs"])
            for t in up[name]:
                out.append({"name": f"{t}.float32", "op": "cast", "inputs": [t],
                            "dtype": "float32"})
                inputs = [f"{t}.float32" if i == t else i for i in inputs]
                added += 1
            entry = dict(entry, inputs=inputs)
        if name in down:
            out.append(dict(entry, name=f"{name}.float32"))
            out.append({"name": name, "op": "cast", "inputs": [f"{name}.float32"], "dtype": dtype})
            added += 1
            continue
        out.append(entry)
    doc["graph"] = out
    return added
