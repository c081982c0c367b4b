"""Squeeze-excitation on the cpu backend (backends/cpu/squeeze_excite.py): which chains become one
gate kernel, which multiplies fold into the 1x1 conv after them, and that the model matches the
NumPy reference on both of the kernels' copies at batches 1 and 3 (each image its own gate). The
spec has EfficientNet's form (SiLU, sigmoid, the gate times a depthwise conv's map, a projection
with a residual), MobileNetV3's (ReLU, hard sigmoid, the map first in the multiply, no biases in
the first conv), a gate whose map is smaller than its conv's outputs (the multiply stays), and
chains that must stay apart (a pooled tensor that is a model output; a product read twice), a
gate with weights large enough that at batch 1 the threads split its products' outputs, and a
map large enough that at batch 1 they split its means by pixels."""

from __future__ import annotations

import json
import os

import pytest

from ait_build.codegen import squeeze_excitation
from ait_build.passes import optimize
from ait_build.spec.model import load_model

from .helpers import write_spec
from .test_wide import check_copy


def n(name, op, inputs, **attrs):
    return {"name": name, "op": op, "inputs": inputs, **attrs}


def pw(name, x, out, **attrs):
    return n(name, "conv2d", [x] if isinstance(x, str) else x, out_channels=out, kernel=1,
             **attrs)


def gate(prefix, x, c, s, act1, act2, bias1=True):
    return [n(f"{prefix}.pool", "global_avg_pool", [x], keepdims=True),
            pw(f"{prefix}.fc1", f"{prefix}.pool", s, activation=act1, bias=bias1),
            pw(f"{prefix}.fc2", f"{prefix}.fc1", c, activation=act2)]


SPEC = dict(
    dims={"batch": {"min": 1, "max": 4, "opt": 2}},
    inputs={"x": {"shape": ["batch", 9, 10, 24]}, "y": {"shape": ["batch", 3, 3, 40]},
            "z": {"shape": ["batch", 6, 6, 200]}, "v": {"shape": ["batch", 16, 16, 128]}},
    graph=[
        # EfficientNet: depthwise -> gate -> map * gate -> projection + residual
        n("dw", "conv2d", ["x"], out_channels=24, kernel=3, padding=1, groups=24,
          activation="silu"),
        *gate("se", "dw", 24, 6, "silu", "sigmoid"),
        n("scaled", "mul", ["se.fc2", "dw"]),
        pw("proj", ["scaled", "x"], 24),
        # MobileNetV3: relu / hard sigmoid, the map first, no bias in the first conv
        *gate("se2", "proj", 24, 8, "relu", "hardsigmoid", bias1=False),
        n("scaled2", "mul", ["proj", "se2.fc2"]),
        pw("proj2", "scaled2", 16, activation="relu"),
        # 9 pixels, 32 outputs: the multiply stays, the gate is still one kernel
        *gate("se3", "y", 40, 10, "relu", "sigmoid"),
        n("scaled3", "mul", ["se3.fc2", "y"]),
        pw("proj3", "scaled3", 32),
        # not a gate: the pooled tensor is a model output
        n("pool4", "global_avg_pool", ["y"], keepdims=True),
        pw("fc4", "pool4", 8, activation="relu"),
        pw("fc4b", "fc4", 40, activation="sigmoid"),
        # a gate, but its product is read twice: the multiply stays
        *gate("se5", "x", 24, 4, "relu", "sigmoid"),
        n("scaled5", "mul", ["se5.fc2", "x"]),
        pw("proj5", "scaled5", 8), n("twice", "relu", ["scaled5"]),
        # weights of 35200 floats: at batch 1 the threads split each product's outputs (88 and
        # 200 columns: slices that end inside a row's last 16)
        *gate("se6", "z", 200, 88, "relu", "hardsigmoid"),
        n("scaled6", "mul", ["z", "se6.fc2"]),
        pw("proj6", "scaled6", 16),
        # 256 pixels of 128 channels: at batch 1 the threads split the means by pixels (the
        # gate's and a pool's)
        *gate("se7", "v", 128, 32, "relu", "sigmoid"),
        n("scaled7", "mul", ["v", "se7.fc2"]),
        pw("proj7", "scaled7", 16),
        n("pool8", "global_avg_pool", ["v"])],
    outputs=["proj2", "proj3", "pool4", "fc4b", "proj5", "twice", "proj6", "proj7", "pool8"])


@pytest.fixture(scope="module")
def built(tmp_path_factory, build_spec):
    spec = write_spec(tmp_path_factory.mktemp("se"), "squeeze_excite", **SPEC)
    model, out_dir, _ = build_spec(spec, name="se")
    return out_dir, model.lib._name, load_model(spec)


def test_kernels_picked(built):
    with open(os.path.join(built[0], "manifest.json")) as fh:
        steps = {s["node"]: s["kernel"].rsplit("_", 1)[0] for s in json.load(fh)["steps"]
                 if s.get("node")}
    gates = {node for node, kernel in steps.items() if kernel == "squeeze_excite"}
    assert gates == {"se.fc2", "se2.fc2", "se3.fc2", "se5.fc2", "se6.fc2", "se7.fc2"}
    for prefix in ("se", "se2", "se3", "se5", "se6", "se7"):  # their pools and first convs: no kernel
        assert f"{prefix}.pool" not in steps and f"{prefix}.fc1" not in steps
    assert steps["proj"] == "conv2d_1x1_scaled_bias_res"
    assert steps["proj2"] == "conv2d_1x1_scaled_bias_relu"
    assert "scaled" not in steps and "scaled2" not in steps
    assert steps["scaled3"] == "mul" and steps["proj3"] == "conv2d_1x1_bias"
    assert steps["scaled5"] == "mul" and steps["proj5"] == "conv2d_1x1_bias"
    assert steps["pool4"] == "global_avg_pool" and steps["fc4"] == "conv2d_1x1_bias_relu"
    assert steps["proj6"] == "conv2d_1x1_scaled_bias" and "scaled6" not in steps
    assert steps["proj7"] == "conv2d_1x1_scaled_bias" and steps["pool8"] == "global_avg_pool"


@pytest.mark.parametrize("copy", ["avx512", "base"])
def test_both_copies_match_reference(built, tmp_path, copy):
    check_copy(built, tmp_path, copy)


def test_means_split_by_pixels_across_threads(built, tmp_path, monkeypatch):
    # three threads: six parts of 42-43 of se7's and pool8's 256 pixels, summed after
    monkeypatch.setenv("AIT_NUM_THREADS", "3")
    check_copy(built, tmp_path, "base")


def test_chains_found_on_the_graph(built, cpu_target):
    graph, _ = optimize(built[2], cpu_target)
    found = squeeze_excitation.gates(graph)
    assert {g.fc2.name for g in found.values()} == {"se.fc2", "se2.fc2", "se3.fc2", "se5.fc2",
                                                    "se6.fc2", "se7.fc2"}
    scales = squeeze_excitation.scales(graph)
    assert {s.conv.name for s in scales.values()} == {"proj", "proj2", "proj6", "proj7"}
