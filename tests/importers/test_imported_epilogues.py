"""torchvision's MobileNetV3-Large and EfficientNet-B0 (random weights) through the optimizer:
every activation after a GEMM or conv (relu, hardswish, the squeeze-excitation gates' hardsigmoid
and sigmoid, silu) is fused into its epilogue on cpu and h200, and the cpu build still matches
PyTorch and the reference executor."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")

from cases import rel_error  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.ops.reference import run_reference  # noqa: E402
from ait_build.passes import optimize  # noqa: E402
from ait_build.passes.fuse_epilogue import GEMMS  # noqa: E402
from ait_build.pipeline import find_target  # noqa: E402

pytestmark = pytest.mark.torch
ACTIVATIONS = ("relu", "relu6", "hardtanh", "clamp", "hardswish", "silu", "sigmoid", "tanh",
               "gelu")
IMAGE = {"x": np.random.default_rng(3).standard_normal((1, 3, 64, 64)).astype(np.float32)}


CASE = ("tests.importers.zoo:torchvision_model", ["x:batch,3,64,64"], ["batch=1:2:1"], IMAGE)


def unfused(graph) -> list:
    """Activations (alone or leading an elementwise group) that read a GEMM's output."""
    made_by = {t: n for n in graph.nodes for t in n.outputs}
    found = []
    for node in graph.nodes:
        steps = [s[0] for s in node.attrs["program"]] if node.op == "fused_elementwise" else [node.op]
        first = made_by.get(node.inputs[0]) if node.inputs else None
        if first is not None and first.op in GEMMS and (
                steps[0] in ACTIVATIONS or steps[:2] == ["add", "relu6"]):
            found.append(f"{node.name} ({'/'.join(steps)}) after {first.name}")
    return found


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """imported(name) -> (spec, weights, graph): each model exported and imported once for the
    module's tests (the optimizer and the reference work on copies of the graph)."""
    done = {}

    def run(name: str):
        if name not in done:
            done[name] = import_case(CASE, tmp_path_factory.mktemp(name), name, {"name": name})
        return done[name]
    return run


@pytest.mark.parametrize("name", ["mobilenet_v3_large", "efficientnet_b0"])
def test_no_activation_is_left_after_a_gemm(name, imported):
    _, _, graph = imported(name)
    for target in ("cpu", "h200"):
        after, _ = optimize(graph, find_target(target))
        assert unfused(after) == [], (target, unfused(after))
        acts = {n.attrs.get("activation") for n in after.nodes if n.op in GEMMS}
        want = {"hardsigmoid", "hardswish", "relu"} if "mobilenet" in name else {"sigmoid", "silu"}
        assert want <= acts, (target, acts)


def test_mobilenet_v3_builds_for_cpu_and_matches(imported, build_spec):
    name = "mobilenet_v3_large"
    spec, _, graph = imported(name)
    model, _, _ = build_spec(spec, name=name)
    got = model.run(IMAGE)[graph.outputs[0]]
    ref = run_reference(graph, IMAGE)[graph.outputs[0]]
    from tests.importers import zoo
    with torch.no_grad():
        want = zoo.torchvision_model(name).eval()(torch.from_numpy(IMAGE["x"])).numpy()
    assert rel_error(ref, want) < 1e-5
    assert rel_error(got, want) < 1e-5
