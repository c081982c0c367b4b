"""The whole pipeline: stage names through the CLI, JSON fields, and the seed models."""

import json
import os

import pytest

from ait_build.cli.main import main
from ait_build.passes import PIPELINE, optimize, pass_names
from ait_build.passes.kernel_signatures import kernel_key, unique_kernels
from ait_build.passes.plan_memory import plan
from ait_build.spec.model import load_model

from .helpers import assert_same_outputs, target

SPECS = os.path.join(os.path.dirname(__file__), "..", "..", "specs")


def spec(name: str) -> str:
    path = os.path.join(SPECS, f"{name}.yaml")
    if not os.path.exists(path):
        pytest.skip(f"specs/{name}.yaml does not exist")
    return path


def graph_json(capsys, path, tgt, stage):
    assert main(["graph", path, "--target", tgt, "--stage", stage, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_pipeline_is_one_named_list():
    assert pass_names() == ["eliminate_dead_code", "fold_constants", "merge_duplicates", "fold_batchnorm",
                            "batchnorm_to_affine", "recognize_activations", "fuse_rmsnorm",
                            "pad_channels", "fuse_attention",
                            "attention_masks", "cancel_permutes", "fuse_layernorm", "fuse_epilogue",
                            "pad_out_channels", "pad_heads", "fuse_rotary", "fuse_elementwise", "fuse_concat",
                            "fuse_data_movement", "plan_memory"]
    assert all(p.doc for p in PIPELINE)


@pytest.mark.parametrize("model", ["tiny_bert", "tiny_cnn"])
def test_every_stage_through_the_cli(capsys, model):
    path = spec(model)
    for stage in ["none"] + pass_names():
        data = graph_json(capsys, path, "cpu", stage)
        assert {"nodes", "kernels", "workspace_bytes"} <= set(data)
        assert [p["name"] for p in data["passes"]] == pass_names()[:len(data["passes"])]
        assert stage == "none" or data["passes"][-1]["name"] == stage


@pytest.mark.parametrize("model", ["tiny_bert", "tiny_cnn"])
def test_each_stage_keeps_or_lowers_nodes_and_kernels(model):
    g = load_model(spec(model))
    seen = []
    for stage in ["none"] + pass_names():
        after, _ = optimize(g, target("cpu"), stop_after=stage)
        memory = after.memory_plan if after.memory_plan is not None else plan(after)
        assert 0 < memory.peak_bytes <= memory.workspace_bytes <= memory.naive_bytes
        seen.append((len(after.nodes), unique_kernels(after)))
    assert seen == sorted(seen, reverse=True)  # no pass adds nodes or kernels on cpu
    assert seen[-1][0] < seen[0][0] and seen[-1][1] < seen[0][1]


def test_unknown_stage_is_a_clear_error(capsys):
    assert main(["graph", spec("mlp"), "--target", "cpu", "--stage", "fuse_everything"]) == 1
    assert "unknown stage 'fuse_everything'" in capsys.readouterr().err


@pytest.mark.parametrize("tgt", ["cpu", "h200"])
def test_resnet50_convs_carry_their_epilogues(tgt):
    g = load_model(spec("resnet50"))
    after, report = optimize(g, target(tgt))
    counts = after.op_counts()
    assert not {"batch_norm", "relu", "add"} & set(counts)
    convs = [n for n in after.nodes if n.op == "conv2d"]
    assert len(convs) == 53 and all(n.attrs["bias"] for n in convs)
    assert sum(n.attrs["activation"] == "relu" for n in convs) == 49
    assert sum(len(n.inputs) == 2 for n in convs) == 16  # the bottleneck residuals
    assert "pad" not in counts  # the stem's image is read unpadded (its windows become GEMM rows)
    assert dict(report)["pad_channels"] == ("" if tgt == "cpu" else
                                            "1 convs left unpadded: their windows are gathered into GEMM rows")
    assert len({kernel_key(after, n) for n in convs}) < 30
    assert after.memory_plan.workspace_bytes < after.memory_plan.naive_bytes / 4


def test_resnet50_numerics_unchanged():
    g = load_model(spec("resnet50"))
    after, _ = optimize(g, target("h200"))
    assert_same_outputs(g, after, {"batch": 1}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("model,dims", [("bert_base", {"batch": 1, "seq": 12}),
                                        ("vit_b16", None),
                                        ("tiny_bert", {"batch": 2, "seq": 9}),
                                        ("tiny_vit", {"batch": 2})])
def test_transformers_have_one_attention_per_layer(model, dims):
    g = load_model(spec(model))
    layers = g.op_counts().get("softmax", 0) + g.op_counts().get("multi_head_attention", 0)
    assert layers == {"bert_base": 12, "vit_b16": 12}.get(model, 2)
    after, _ = optimize(g, target("cpu"))
    counts = after.op_counts()
    assert counts["multi_head_attention"] == layers and "softmax" not in counts
    assert all(n.attrs["packed"] for n in after.nodes if n.op == "multi_head_attention")
    assert not {"permute", "matmul", "gelu", "div"} & set(counts)
    if dims is not None:  # vit_b16's reference takes ~5 s a run here; tiny_vit has its layers
        assert_same_outputs(g, after, dims, rtol=1e-4, atol=1e-4)


def test_report_rows(capsys):
    from ait_build.bench import passes_report as report
    m = report.measure(spec("tiny_cnn"), target("cpu"), {"batch": 8})
    assert m["nodes"][0] > m["nodes"][1] and m["kernels"][0] > m["kernels"][1]
    assert m["peak"] <= m["workspace"] <= m["naive"] <= m["naive_before"]
    text = report.tables([("tiny", m)])
    assert f"| tiny (float32) | batch 8 | {m['nodes'][0]} -> {m['nodes'][1]} |" in text
    assert "batch_norm 6" in text.splitlines()[-1] and "batch_norm" not in text.split("|")[-2]
