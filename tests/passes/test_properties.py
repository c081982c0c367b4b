"""Property tests: random small graphs, written as YAML text, give the same reference outputs before
and after the whole pipeline (on cpu, and on h200 where channel padding also runs)."""

import json

import numpy as np

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ait_build.ir.graph import verify
from ait_build.passes import optimize
from ait_build.ops.reference import random_inputs, run_reference

from .helpers import assert_same_outputs, load_text, run_in_workspace, target

UNARY = ["relu", "gelu", "tanh", "sigmoid", "silu", "hardswish", "identity"]
SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


class Builder:
    """Tracks the tensors a random graph has made so far, by shape."""

    def __init__(self, draw, first: str, shape: tuple):
        self.draw, self.entries, self.shapes, self.last = draw, [], {first: shape}, first
        self.params = 0

    def add(self, op: str, inputs: list, out_shape: tuple, **attrs) -> str:
        name = f"n{len(self.entries)}"
        self.entries.append(dict(name=name, op=op, inputs=inputs, **attrs))
        self.shapes[name], self.last = out_shape, name
        return name

    def same_shape(self, shape: tuple) -> str:
        return self.draw(st.sampled_from(sorted(t for t, s in self.shapes.items() if s == shape)))

    def vector(self, n: int, rank: int) -> str:
        self.params += 1
        shape = [1] * (rank - 1) + [n]
        vec = self.add("parameter", [], tuple(shape), shape=shape,
                       weights={"value": f"vec{self.params}"})
        if self.draw(st.booleans()):  # a weight-only chain for constant folding
            vec = self.add("mul", [self.add("tanh", [vec], tuple(shape))], tuple(shape), scalar=3.0)
        return vec

    def epilogue(self) -> None:
        """What often follows a GEMM/conv: a batch norm, then some elementwise ops."""
        if self.draw(st.booleans()):
            self.add("batch_norm", [self.last], self.shapes[self.last])
        if self.draw(st.booleans()):
            self.elementwise_chain(self.last)

    def elementwise_chain(self, x: str) -> str:
        for _ in range(self.draw(st.integers(1, 3))):
            x = self.elementwise(x)
        if self.draw(st.integers(0, 4)) == 0:  # a dead branch
            self.add("relu", [self.same_shape(self.shapes[x])], self.shapes[x])
            self.last = x
        return x

    def elementwise(self, x: str) -> str:
        shape = self.shapes[x]
        kind = self.draw(st.sampled_from(["unary", "binary", "scalar", "bias", "residual_ln"]))
        if kind == "unary":
            op = self.draw(st.sampled_from(UNARY))
            extra = {"approximate": "tanh"} if op == "gelu" and self.draw(st.booleans()) else {}
            return self.add(op, [x], shape, **extra)
        if kind == "binary":
            op = self.draw(st.sampled_from(["add", "mul", "sub"]))
            return self.add(op, [x, self.same_shape(shape)], shape)
        if kind == "scalar":
            op = self.draw(st.sampled_from(["add", "mul", "div", "sub"]))
            value = self.draw(st.sampled_from([0.0, 1.0, 0.5, 2.0, -3.0]))
            return self.add(op, [x], shape, scalar=value if op != "div" or value else 1.0)
        if kind == "bias":
            vec = self.vector(shape[-1], len(shape))
            return self.add("add", [vec, x] if self.draw(st.booleans()) else [x, vec], shape)
        total = self.add("add", [x, self.same_shape(shape)], shape)
        return self.add("layer_norm", [total], shape)

    def yaml(self, inputs: dict, dims: str, outputs: list) -> str:
        lines = [f"  - {json.dumps(e)}" for e in self.entries]
        ins = ", ".join(f"{k}: {{shape: {json.dumps(v)}}}" for k, v in inputs.items())
        return ("apiVersion: ait-build/v1\nkind: Model\nname: random\ndtype: float32\n"
                f"dims: {dims}\ninputs: {{{ins}}}\nweights: {{random: {{seed: 1}}}}\n"
                "graph:\n" + "\n".join(lines) + f"\noutputs: {json.dumps(outputs)}\n")


def outputs_of(b: Builder, draw) -> list:
    """The last tensor, plus sometimes an earlier one (so intermediates gain outside readers)."""
    made = [e["name"] for e in b.entries if e["op"] != "parameter"]
    extra = draw(st.sampled_from(made))
    return [b.last] if extra == b.last or draw(st.booleans()) else [extra, b.last]


@st.composite
def sequence_graphs(draw):
    """Transformer-ish: linears, elementwise ops, norms, softmax, a written-out attention."""
    feat = draw(st.sampled_from([8, 12, 16]))
    b = Builder(draw, "x", ("batch", 5, feat))
    for _ in range(draw(st.integers(1, 7))):
        x, shape = b.last, b.shapes[b.last]
        step = draw(st.sampled_from(["linear", "linear", "elementwise", "elementwise", "norm",
                                     "softmax", "attention"]))
        if step == "linear":
            n = draw(st.sampled_from([8, 16]))
            b.add("linear", [x], shape[:-1] + (n,), out_features=n, bias=draw(st.booleans()))
            b.epilogue()
        elif step == "elementwise":
            b.elementwise_chain(x)
        elif step == "norm":
            b.add("layer_norm", [x], shape)
        elif step == "softmax":
            b.add("softmax", [x], shape, axis=-1)
        elif shape[-1] % 4 == 0:
            attention(b, x, shape)
    return b.yaml({"x": ["batch", 5, feat]}, "{batch: {min: 1, max: 3, opt: 2}}", outputs_of(b, draw))


def attention(b: Builder, x: str, shape: tuple) -> None:
    feat, heads = shape[-1], 2
    split = ["batch", 5, heads, feat // heads]
    parts = []
    for role in "qkv":
        b.add("linear", [x], shape, out_features=feat)
        b.add("reshape", [b.last], tuple(split), shape=split)
        parts.append(b.add("permute", [b.last], ("batch", heads, 5, feat // heads), dims=[0, 2, 1, 3]))
    scores = ("batch", heads, 5, 5)
    b.add("matmul", parts[:2], scores, transpose_b=True)
    b.add("div", [b.last], scores, scalar=2.0)
    b.add("softmax", [b.last], scores, axis=-1)
    b.add("matmul", [b.last, parts[2]], ("batch", heads, 5, feat // heads))
    b.add("permute", [b.last], tuple(split), dims=[0, 2, 1, 3])
    b.add("reshape", [b.last], shape, shape=list(shape))


@st.composite
def image_graphs(draw):
    """CNN-ish: convs (some strided, some grouped), batch norms, activations, residual adds."""
    channels = draw(st.sampled_from([3, 4, 8]))
    b = Builder(draw, "image", ("batch", 6, 6, channels))
    for _ in range(draw(st.integers(1, 6))):
        x, shape = b.last, b.shapes[b.last]
        step = draw(st.sampled_from(["conv", "conv", "elementwise", "pool"]))
        if step == "conv":
            out = draw(st.sampled_from([4, 8]))
            k = draw(st.sampled_from([1, 3]))
            groups = shape[-1] if out == shape[-1] and draw(st.booleans()) else 1
            b.add("conv2d", [x], shape[:-1] + (out,), out_channels=out, kernel=k, padding=k // 2,
                  groups=groups, bias=draw(st.booleans()))
            b.epilogue()
        elif step == "elementwise":
            b.elementwise_chain(x)
        else:
            b.add("max_pool2d", [x], shape, kernel=3, stride=1, padding=1)
    b.add("global_avg_pool", [b.last], ("batch", b.shapes[b.last][-1]))
    return b.yaml({"image": ["batch", 6, 6, channels]}, "{batch: {min: 1, max: 2, opt: 2}}",
                  outputs_of(b, draw))


def check(text: str, tgt: str) -> None:
    graph = load_text(text)
    after, _ = optimize(graph, target(tgt))
    verify(after)
    assert after.memory_plan.workspace_bytes <= after.memory_plan.naive_bytes
    assert_same_outputs(graph, after, rtol=1e-4, atol=1e-5)
    inputs = random_inputs(graph, {"batch": graph.dims["batch"].max})
    want, got = run_reference(graph, inputs), run_in_workspace(after, inputs)
    for name in want:  # the memory plan holds: no live value is overwritten
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)


@SETTINGS
@given(sequence_graphs(), st.sampled_from(["cpu", "h200"]))
def test_random_sequence_graphs_keep_their_outputs(text, tgt):
    check(text, tgt)


@SETTINGS
@given(image_graphs(), st.sampled_from(["cpu", "h200"]))
def test_random_image_graphs_keep_their_outputs(text, tgt):
    check(text, tgt)
