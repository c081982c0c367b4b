"""The public benchmark's harness (ait_build/bench/zoo*.py) without a GPU: the models and cases
it runs, the specs it writes (random weights beside the import's constants, which bench loads
into the PyTorch module too) and the table it prints from `ait-build bench` reports."""

from __future__ import annotations

import copy
import importlib.util
import os

import numpy as np
import pytest

from ait_build.bench import zoo, zoo_specs, zoo_table
from ait_build.cli.main import main

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_zoo_is_the_issues_list_at_its_batches():
    assert [m.name for m in zoo_specs.ZOO] == [
        "mobilenet_v3_large", "efficientnet_v2_s", "convnext_small", "regnet_x_3_2gf",
        "resnext101_32x8d", "swin_s", "densenet121", "shufflenet_v2_x1_0", "roberta_base",
        "gpt2_medium", "t5_base_encoder"]
    large = {m.name: m.batches for m in zoo_specs.ZOO}
    assert large["resnext101_32x8d"] == (1, 128) and large["swin_s"] == (1, 64)
    assert large["gpt2_medium"] == (1, 16) and large["roberta_base"] == (1, 32)
    assert zoo_specs.import_args(zoo_specs.BY_NAME["gpt2_medium"]) == [
        "import", "torch", "ait_build.bench.zoo_models:gpt2_medium", "--dtype", "float16", "-o",
        os.path.join("build", "zoo", "gpt2_medium.yaml"), "--input", "input_ids:batch,seq:int64",
        "--dim", "batch=1:16:1", "--dim", "seq=1:1024:128"]


def test_cases_per_seq_and_the_options_that_pick_them():
    gpt2, cnn = zoo_specs.BY_NAME["gpt2_medium"], zoo_specs.BY_NAME["convnext_small"]
    assert zoo.bench_cases(gpt2, None, None) == [([1, 16], 128), ([1, 16], 1024)]
    assert zoo.bench_cases(gpt2, [4], (256,)) == [([4], 256)]
    assert zoo.bench_cases(cnn, None, None) == [([1, 128], None)]
    args = lambda *a: zoo.parser().parse_args(list(a))  # noqa: E731
    quick = zoo.select(args("--quick"))
    assert [(m.name, s) for m, s in quick] == [("mobilenet_v3_large", None),
                                               ("gpt2_medium", (128,)),
                                               ("efficientnet_v2_s", None),
                                               ("convnext_small", None)]
    assert [(m.name, s) for m, s in zoo.select(args("--models", "t5_base_encoder,swin_s"))] == [
        ("t5_base_encoder", None), ("swin_s", None)]
    picked = zoo.select(args("--models", "swin_s,gpt2_medium,t5_base_encoder", "--seq", "256"))
    assert [s for _, s in picked] == [None, (256,), None]  # --seq: where there is a seq dim
    with pytest.raises(SystemExit, match="unknown zoo model resnet9"):
        zoo.select(args("--models", "resnet9"))


def test_the_outside_set_is_picked_by_set_and_by_name():
    args = lambda *a: zoo.parser().parse_args(list(a))  # noqa: E731
    outside = [m.name for m, _ in zoo.select(args("--set", "outside"))]
    assert outside == [m.name for m in zoo_specs.OUTSIDE] and outside[:2] == [
        "mixtral_small", "llama_small"]
    assert not set(outside) & {m.name for m in zoo_specs.ZOO}  # no model in both sets
    assert [m.name for m, _ in zoo.select(args())] == [m.name for m in zoo_specs.ZOO]
    picked = zoo.select(args("--models", "wav2vec2_base,swin_s,llama_small"))
    assert [(m.name, s) for m, s in picked] == [("wav2vec2_base", None), ("swin_s", None),
                                                ("llama_small", None)]
    assert zoo_specs.import_args(zoo_specs.BY_NAME["wav2vec2_base"])[2:] == [
        "ait_build.bench.outside_models:wav2vec2_base", "--dtype", "float16", "-o",
        os.path.join("build", "zoo", "wav2vec2_base.yaml"), "--input", "x:batch,16000",
        "--dim", "batch=1:32:1"]
    with pytest.raises(SystemExit):
        args("--set", "private")


def side(ms, **extra):
    return dict({"median_ms": ms}, **extra)


def test_the_table_puts_ours_beside_the_best_pytorch_mode():
    cuda = {"model": "swin_s", "results": [
        {"dims": {"batch": 1}, "ait_build": side(1.2), "torch_eager": side(4.0),
         "torch_eager_cuda_graph": side(1.5), "torch_compile": side(1.0, mode="reduce-overhead"),
         "rel_l2_vs_float32": {"ait_build": 6.3e-4, "torch_eager": 7.1e-4}},
        {"dims": {"batch": 64}, "ait_build": side(20.0), "torch_eager": side(30.0),
         "torch_eager_cuda_graph": {"skipped": "RuntimeError: x"},
         "torch_compile": {"skipped": "--compile-mode none"}}]}
    cpu = {"model": "shufflenet_v2_x1_0", "results": [
        {"dims": {"batch": 1}, "ait_build": side(30.0),
         "torch": side(60.0, max_abs_diff=1e-3, rel_l2=4e-4)}]}
    rows = zoo_table.summary_rows([cuda, cpu, {"rc": "timeout"}])
    assert [(r["model"], r["best"], r["ours_over_best"]) for r in rows] == [
        ("swin_s", "compile", 1.2), ("swin_s", "eager", 20.0 / 30.0),
        ("shufflenet_v2_x1_0", "eager", 0.5)]
    assert rows[0]["rel_l2_ours"] == 6.3e-4 and rows[0]["rel_l2_torch_fp16"] == 7.1e-4
    assert rows[2]["rel_l2_ours"] == 4e-4 and rows[2]["rel_l2_torch_fp16"] is None
    lines = zoo_table.markdown(rows, no_compile=False).splitlines()
    assert lines[0].startswith("| model | dims | ait-build ms | eager ms | eager+graph ms | "
                               "compile ms | best | ours/best | rel L2 ours |")
    assert lines[2] == ("| swin_s | batch=1 | 1.200 | 4.000 | 1.500 | 1.000 | compile | **1.20** "
                        "| 6.3e-04 | 7.1e-04 |")
    assert lines[3].startswith("| swin_s | batch=64 | 20.000 | 30.000 | - | - | eager | **0.67**")
    assert "compile ms (--no-compile)" in zoo_table.markdown(rows, no_compile=True)
    assert "| skipped |" in zoo_table.markdown(rows, no_compile=True)


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None, reason="needs torchvision")
@pytest.mark.parametrize("factory", ["small_swin", "small_swin_unseeded", "small_swin_v2_unseeded"])
def test_random_weights_with_constants_reach_the_source_module(factory, tmp_path, monkeypatch):
    """A zoo spec: random weights, the import's constants (a Swin's index tables and shift
    masks) in a small file. bench's module gets the same values: it computes what the spec's
    reference executor computes. Also for a factory that draws its weights from the generator's
    state at the time (torchvision's swin_s), imported after other draws: its relative position
    bias tables must reach the spec as weights, not as biases computed from the import's tables,
    which the module bench rebuilds (seeded) does not have. And for one whose parameters the
    import folds into constants (Swin V2's position-bias MLP): the import and the rebuild call
    the factory under the same seed, so the rebuilt module has the parameters folded."""
    import torch
    from ait_build.bench.source_twin import comparison_twin
    from ait_build.ops.reference import random_inputs, run_reference
    from ait_build.spec.model import load_model
    from safetensors.numpy import load_file
    monkeypatch.syspath_prepend(REPO)  # tests.importers.zoo:small_swin
    monkeypatch.chdir(tmp_path)
    model = zoo_specs.ZooModel("swin", f"tests.importers.zoo:{factory}", ("x:batch,3,32,32",),
                         ("batch=1:2:1",), (1, 2))
    assert not zoo_specs.imported_already(model)
    torch.manual_seed(1234)  # another state than the rebuild's
    assert main(zoo_specs.import_args(model)) == 0
    zoo_specs.randomize_weights(zoo_specs.spec_path(model), model)
    assert sorted(os.listdir("build/zoo")) == ["swin.constants.safetensors", "swin.yaml"]
    assert zoo_specs.imported_already(model)  # a second run keeps it
    spec = zoo_specs.spec_path(model)
    with open(spec) as fh:
        assert "weights: {random: {seed: 0}, file: swin.constants.safetensors}\n" in fh.read()
    constants = load_file("build/zoo/swin.constants.safetensors")
    assert constants and all(".attn." in k for k in constants)  # folded index tables, named by module
    assert all(k not in constants for k in ("head.weight", "features.0.0.weight"))
    graph = load_model(spec)
    twin = comparison_twin(spec, graph, "swin")
    assert twin.note == ""  # the constants file is the one the source names
    inputs = random_inputs(graph, seed=3)
    want = run_reference(graph, inputs)[graph.outputs[0]]
    # as the cuda bench uses it: a float32 copy beside the module converted to another dtype
    reference = copy.deepcopy(twin.module)
    converted = twin.module.double()
    args = twin.to_args(inputs)
    with torch.no_grad():
        (got,) = reference(*args)
        (got64,) = converted(*[a.double() for a in args])
    assert got.dtype == torch.float32 and got64.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got64.numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.torch
def test_random_weights_reach_a_conv1d_stored_with_a_unit_axis(tmp_path, monkeypatch):
    """The import stores a conv1d's [O, C, K] weight as the conv's [O, C, 1, K]: bench's module
    takes it back (was: a shape error, so no model with a conv1d could be compared)."""
    import torch
    from ait_build.bench.source_twin import comparison_twin
    from ait_build.ops.reference import random_inputs, run_reference
    from ait_build.spec.model import load_model
    monkeypatch.syspath_prepend(os.path.join(REPO, "tests", "bench"))  # user_models:tiny_audio
    monkeypatch.chdir(tmp_path)
    model = zoo_specs.ZooModel("audio", "user_models:tiny_audio", ("x:batch,4,32",),
                               ("batch=1:2:1",), (1, 2))
    assert main(zoo_specs.import_args(model)) == 0
    zoo_specs.randomize_weights(zoo_specs.spec_path(model), model)
    graph = load_model(zoo_specs.spec_path(model))
    assert tuple(graph.weights.get("0.weight").shape) == (8, 4, 1, 3)
    twin = comparison_twin(zoo_specs.spec_path(model), graph, "audio")
    inputs = random_inputs(graph, seed=4)
    with torch.no_grad():
        (got,) = twin.module.float()(*twin.to_args(inputs))
    want = run_reference(graph, inputs)[graph.outputs[0]]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-3, atol=1e-3)


def test_weights_step_writes_the_weights_a_library_was_built_with(tmp_path, monkeypatch):
    """Libraries built elsewhere and copied without their weights: the weights step writes each
    file again from the spec's seed where its digest is the manifest's, and refuses (writing
    nothing) where the library was built from other weights."""
    import json
    import shutil
    from ait_build.build.invoke import build
    monkeypatch.chdir(tmp_path)
    os.makedirs("build/zoo")
    shutil.copy(os.path.join(REPO, "specs", "mlp.yaml"), "build/zoo/mlp.yaml")
    folder = build("build/zoo/mlp.yaml", "cpu", cache=os.path.join(REPO, "build", "cache"),
                   root=str(tmp_path), quiet=True)
    weights = os.path.join(folder, "weights.safetensors")
    with open(weights, "rb") as fh:
        built = fh.read()
    os.unlink(weights)
    model = zoo_specs.ZooModel("mlp", "", (), (), (1,))
    lines = []
    assert zoo.write_weights([model], "cpu", lines.append) == {"mlp": {"ok": True,
                                                                       "bytes": len(built)}}
    with open(weights, "rb") as fh:
        assert fh.read() == built
    os.unlink(weights)
    manifest = os.path.join(folder, "manifest.json")
    with open(manifest) as fh:
        record = json.load(fh)
    record["weights"]["sha256"] = "0" * 64  # as if built from other weights
    with open(manifest, "w") as fh:
        json.dump(record, fh)
    assert zoo.write_weights([model], "cpu", lines.append)["mlp"]["ok"] is False
    assert not os.path.exists(weights)
    assert lines[-1] == "weights mlp: FAILED: not the weights its library was built with"
