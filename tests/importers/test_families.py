"""Issue 32's model families: each imported from PyTorch and from the file torch.onnx.export
writes, built for cpu and compared with PyTorch at batch 1 (largest difference within 1e-5 of
the largest output).

The default run imports `kitchen_sink` (families.py: every op and pattern the families
brought, in one small module) and `transposed` (1-d and 3-d transposed convs) both ways and
builds them. The library classes themselves (T5,
DeBERTa-v2, Llama, Swin V2, BEiT, ConvNeXt V2, BERT/RoBERTa, GPT-2 with its cache, FCN, LR-ASPP,
SqueezeNet, MaxViT, wav2vec2, Whisper's encoder, R3D, U-Net-style decoders, LSTM/GRU, a
RetinaNet) are `slow`: about three minutes on two cores (`pytest -m slow
tests/importers/test_families.py`)."""

from __future__ import annotations

import contextlib
import importlib
import io
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")

from cases import rel_error  # noqa: E402

from ait_build.importers.boundaries import prepare  # noqa: E402
from ait_build.importers.from_onnx import import_onnx  # noqa: E402
from ait_build.importers.from_torch import import_torch  # noqa: E402
from ait_build.importers.options import dims_for, parse_dim, parse_input  # noqa: E402
from ait_build.importers.simplify import simplify  # noqa: E402
from ait_build.importers.write import write_spec  # noqa: E402
from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
RTOL = 1e-5
RNG = np.random.default_rng(32)
SINK = ("tests.importers.families:kitchen_sink", ["x:batch,3,12,12"], ["batch=1:2:1"],
        {"x": RNG.standard_normal((1, 3, 12, 12)).astype(np.float32)})
TRANSPOSED = ("tests.importers.families:transposed", ["x:batch,4,10", "v:batch,2,3,5,5"],
              ["batch=1:2:1"], {"x": RNG.standard_normal((1, 4, 10)).astype(np.float32),
                                "v": RNG.standard_normal((1, 2, 3, 5, 5)).astype(np.float32)})


def _model(factory: str):
    """The module as the import sees it (a detector up to its head, transformers' cache off)."""
    module, _, attr = factory.partition(":")
    return prepare(getattr(importlib.import_module(module), attr)().eval(), lambda text: None)


def _outputs(out) -> list:
    if hasattr(out, "to_tuple"):  # transformers' ModelOutput
        out = out.to_tuple()
    if isinstance(out, dict):
        out = list(out.values())
    out = out if isinstance(out, (list, tuple)) else [out]
    return [o.numpy() for o in out if isinstance(o, torch.Tensor)]


def import_family(case, source: str, out_dir, name: str):
    """(spec path, graph) of the case imported from `source` ('torch', 'onnx': the exporter
    torch.onnx.export uses by default, 'torchscript': its older one)."""
    factory, input_texts, dim_texts, feed = case[:4]
    inputs = [parse_input(t) for t in input_texts]
    dims = [parse_dim(t) for t in dim_texts]
    if source == "torch":
        graph = import_torch(factory, None, inputs, dims_for(inputs, dims), name)
    else:
        path = os.path.join(str(out_dir), f"{name}.onnx")
        tdims = {d.name: torch.export.Dim(d.name, min=d.min, max=d.max) for d in dims}
        dynamic = tuple({i: tdims[s] for i, s in enumerate(spec.shape) if isinstance(s, str)}
                        or None for spec in inputs)
        # batch 2 as the example: exporters specialize sizes of 1
        example = tuple(torch.from_numpy(np.concatenate([v, v])) for v in feed.values())
        names = [s.name for s in inputs]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            if source == "onnx":
                torch.onnx.export(_model(factory), example, path, dynamo=True,
                                  dynamic_shapes=dynamic, input_names=names)
            else:
                axes = {s.name: {i: d for i, d in enumerate(s.shape) if isinstance(d, str)}
                        for s in inputs}
                torch.onnx.export(_model(factory), example, path, dynamo=False,
                                  input_names=names, dynamic_axes=axes)
        graph = import_onnx(path, [], dims, name)
    simplify(graph)
    spec, _, built = write_spec(graph, os.path.join(str(out_dir), f"{name}.yaml"), "test import")
    return spec, built


def check_family(case, source, tmp_path, build_spec, name) -> None:
    spec, graph = import_family(case, source, tmp_path, name)
    feed = case[3]
    with torch.no_grad():
        want = _outputs(_model(case[0])(*(torch.from_numpy(v) for v in feed.values())))
    ref = run_reference(graph, feed)
    model, _, _ = build_spec(spec, name=name)
    got = model.run(feed)
    assert len(graph.outputs) == len(want)
    for out, expected in zip(graph.outputs, want):
        assert rel_error(ref[out], expected) < RTOL, (out, rel_error(ref[out], expected))
        assert rel_error(got[out], expected) < RTOL, (out, rel_error(got[out], expected))


@pytest.mark.parametrize("source", ["torch", "onnx"])
def test_kitchen_sink_matches_torch_on_cpu(source, tmp_path, build_spec):
    check_family(SINK, source, tmp_path, build_spec, f"sink_{source}")


@pytest.mark.parametrize("source", ["torch", "onnx"])
def test_transposed_convs_of_1_and_3_dims_match_torch_on_cpu(source, tmp_path, build_spec):
    check_family(TRANSPOSED, source, tmp_path, build_spec, f"transposed_{source}")


def _image(h, w=None, c=3, name="x"):
    return {name: RNG.standard_normal((1, c, h, w or h)).astype(np.float32)}


def _ids(name="input_ids"):
    return {name: RNG.integers(3, 100, (1, 8))}


IMAGE = ["batch=1:2:1"]
TEXT = ["batch=1:2:1", "seq=2:16:8"]
F = "tests.importers.families:"
# name -> (factory, --input, --dim, batch-1 inputs, ONNX exporter); T5's and BEiT's eager
# attention views trip torch.onnx.export's default exporter (torch 2.14): its older one writes them
FAMILIES = {
    "squeezenet": (F + "squeezenet", ["x:batch,3,48,48"], IMAGE, _image(48), "onnx"),
    "fcn": (F + "fcn", ["x:batch,3,64,64"], IMAGE, _image(64), "onnx"),
    "decoder": (F + "decoder", ["x:batch,8,6,6"], IMAGE, _image(6, c=8), "onnx"),
    "t5": (F + "t5", ["input_ids:batch,seq:int64"], TEXT, _ids(), "torchscript"),
    "deberta": (F + "deberta", ["input_ids:batch,seq:int64"], TEXT, _ids(), "onnx"),
    "llama": (F + "llama", ["input_ids:batch,seq:int64"], TEXT, _ids(), "onnx"),
    "gpt2_with_cache": (F + "gpt2_with_cache", ["input_ids:batch,seq:int64"], TEXT, _ids(),
                        "onnx"),
    "bert": (F + "bert", ["input_ids:batch,seq:int64"], TEXT, _ids(), "onnx"),
    "roberta": (F + "roberta", ["input_ids:batch,seq:int64"], TEXT, _ids(), "onnx"),
    "swin_v2": (F + "swin_v2", ["x:batch,3,32,32"], IMAGE, _image(32), "onnx"),
    "beit": (F + "beit", ["pixel_values:batch,3,32,32"], IMAGE, _image(32, name="pixel_values"),
             "torchscript"),
    "convnext_v2": (F + "convnext_v2", ["pixel_values:batch,3,32,32"], IMAGE,
                    _image(32, name="pixel_values"), "onnx"),
    "maxvit": (F + "maxvit", ["x:batch,3,32,32"], IMAGE, _image(32), "onnx"),
    "wav2vec2": (F + "wav2vec2", ["input_values:batch,400"], IMAGE,
                 {"input_values": RNG.standard_normal((1, 400)).astype(np.float32)}, "onnx"),
    "whisper_encoder": (F + "whisper_encoder", ["input_features:batch,8,32"], IMAGE,
                        {"input_features": RNG.standard_normal((1, 8, 32)).astype(np.float32)},
                        "onnx"),
    "r3d": (F + "r3d", ["x:batch,3,4,32,32"], IMAGE,
            {"x": RNG.standard_normal((1, 3, 4, 32, 32)).astype(np.float32)}, "onnx"),
    "recurrent": (F + "recurrent", ["x:batch,6,8"], IMAGE,
                  {"x": RNG.standard_normal((1, 6, 8)).astype(np.float32)}, "onnx"),
    "retinanet": (F + "retinanet", ["x:batch,3,64,64"], IMAGE, _image(64), "onnx"),
}


@pytest.mark.slow
@pytest.mark.parametrize("source", ["torch", "file"])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_matches_torch_on_cpu(name, source, tmp_path, build_spec):
    case = FAMILIES[name]
    check_family(case, "torch" if source == "torch" else case[4], tmp_path, build_spec,
                 f"{name}_{source}")
