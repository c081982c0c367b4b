"""Shared helpers for the pass tests: small models from YAML text, targets with capabilities
switched off, and the before/after check every pass test makes (graph valid, outputs unchanged)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
import textwrap

import numpy as np

from ait_build.ir.dtypes import NUMPY, is_float
from ait_build.ir.graph import Graph, verify
from ait_build.ops.reference import bind_dims, random_inputs, run_reference
from ait_build.passes.rewrite import run_node
from ait_build.pipeline import find_target
from ait_build.spec.model import load_model

HEADER = """\
apiVersion: ait-build/v1
kind: Model
name: {name}
dtype: {dtype}
dims: {dims}
inputs: {inputs}
weights: {{random: {{seed: {seed}}}}}
graph:
{graph}
outputs: {outputs}
"""


def model(graph: str, inputs: str, outputs: str, dims: str = "{batch: {min: 1, max: 4, opt: 2}}",
          name: str = "t", dtype: str = "float32", seed: int = 0) -> Graph:
    """A Graph from the `graph:` entries (YAML text) and one-line inputs/outputs/dims maps."""
    text = HEADER.format(name=name, dtype=dtype, dims=dims, inputs=inputs, seed=seed,
                         outputs=outputs, graph=textwrap.indent(textwrap.dedent(graph).strip(), "  "))
    return load_text(text)


def load_text(text: str) -> Graph:
    fd, path = tempfile.mkstemp(suffix=".yaml", prefix="ait_pass_test_")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        return load_model(path)
    finally:
        os.unlink(path)


def target(name: str = "cpu", **caps):
    """A shipped target, with some capabilities replaced (e.g. fused_attention=False)."""
    t = find_target(name)
    merged = dict(t.capabilities, **caps)
    return dataclasses.replace(t, capabilities=tuple(sorted(merged.items())))


def apply(graph: Graph, run, tgt=None) -> tuple:
    """(edited copy, summary) after one pass; the copy must still verify."""
    after = graph.copy()
    summary = run(after, tgt if tgt is not None else target())
    verify(after)
    return after, summary


def assert_same_outputs(before: Graph, after: Graph, dims=None, seed: int = 0, rtol: float = 1e-5,
                        atol: float = 1e-5) -> None:
    inputs = random_inputs(before, dims, seed=seed)
    want, got = run_reference(before, inputs), run_reference(after, inputs)
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=atol, err_msg=name)


def check_pass(graph: Graph, run, tgt=None, dims=None, **tol) -> tuple:
    """Runs one pass, verifies the graph and checks that the reference outputs are unchanged."""
    after, summary = apply(graph, run, tgt)
    assert_same_outputs(graph, after, dims, **tol)
    return after, summary


def ops(graph: Graph) -> list:
    return [n.op for n in graph.nodes]


def node_of(graph: Graph, op: str):
    (node,) = [n for n in graph.nodes if n.op == op]
    return node


def storage(graph, t):
    """The reference's array type for a tensor: float32 for every float dtype."""
    dtype = graph.tensors[t].dtype
    return np.float32 if is_float(dtype) else NUMPY[dtype]


def run_in_workspace(graph, inputs):
    """Executes the graph with every planned tensor stored in ONE byte buffer at its offset:
    a wrong offset or lifetime clobbers a live value and changes the outputs."""
    plan = graph.memory_plan
    env = bind_dims(graph, inputs)
    ws = np.zeros(plan.workspace_bytes, np.uint8)
    values = {k: v.astype(storage(graph, k)) for k, v in inputs.items()}

    def read(t):  # a view reads the bytes of the tensor it views
        home = plan.home(t)
        if home is None:
            return values[t]
        shape = tuple(d.eval(env) for d in graph.tensors[t].shape)
        count = int(np.prod(shape))
        return np.frombuffer(ws, storage(graph, t), count, plan.offsets[home]).reshape(shape).copy()

    for node in graph.nodes:
        outs = run_node(graph, node, [read(t) for t in node.inputs], env)
        for t, arr in zip(node.outputs, outs):
            if t in plan.offsets:
                raw = np.ascontiguousarray(arr, storage(graph, t)).view(np.uint8).ravel()
                assert raw.size <= plan.sizes[t]
                ws[plan.offsets[t]:plan.offsets[t] + raw.size] = raw
            else:
                values[t] = arr
    return {t: read(t) for t in graph.outputs}


# where a pass that pads 16-bit tensors to a GPU's alignment has nothing to do: float32 on the
# GPU, every dtype on targets of alignment 1
NO_ALIGNMENT = (("float32", "h200"), ("float16", "cpu"), ("float16", "mi250"))


def assert_unpadded(graph: str, inputs: str, outputs: str, run) -> None:
    """The pass leaves the model alone on NO_ALIGNMENT: an empty summary, the same ops and the
    same reference outputs."""
    for dtype, tgt in NO_ALIGNMENT:
        g = model(graph, inputs, outputs, dtype=dtype)
        after, summary = check_pass(g, run, target(tgt), rtol=2e-3, atol=2e-3)
        assert summary == "" and ops(after) == ops(g), (dtype, tgt)
