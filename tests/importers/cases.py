"""The models both importer tests take (tests/importers/zoo.py, torchvision's resnet18), their
inputs as `--input` writes them, and batch-1 example inputs."""

from __future__ import annotations

import numpy as np

# name -> (factory, --input texts, --dim texts, example inputs at batch 1)
RNG = np.random.default_rng(0)
IMAGE = {"x": RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)}
MASK = np.array([[1, 1, 1, 1, 1, 1, 0, 0]], np.int64)  # two padded positions: the mask matters
CASES = {
    "residual_cnn": ("tests.importers.zoo:residual_cnn", ["x:batch,3,16,16"], ["batch=1:4:1"],
                     IMAGE),
    "depthwise_se": ("tests.importers.zoo:depthwise_se", ["x:batch,3,16,16"], ["batch=1:4:1"],
                     IMAGE),
    "bert_encoder": ("tests.importers.zoo:bert_encoder",
                     ["input_ids:batch,seq:int64", "attention_mask:batch,seq:int64"],
                     ["batch=1:4:1", "seq=1:12:8"],
                     {"input_ids": RNG.integers(0, 50, (1, 8)), "attention_mask": MASK}),
    "gpt2": ("tests.importers.zoo:gpt2", ["input_ids:batch,seq:int64"],
             ["batch=1:4:1", "seq=1:12:8"], {"input_ids": RNG.integers(0, 50, (1, 8))}),
    "vit": ("tests.importers.zoo:vit", ["x:batch,3,16,16"], ["batch=1:4:1"], IMAGE),
}
RESNET18 = ("tests.importers.zoo:resnet18", ["x:batch,3,64,64"], ["batch=1:2:1"],
            {"x": RNG.standard_normal((1, 3, 64, 64)).astype(np.float32)})
# small configurations of the library classes (torchvision's SwinTransformer, ConvNeXt and ResNet
# as ResNeXt, transformers' DistilBertModel and GPT2Model): the code paths of their zoo models,
# built for cpu
IMAGE32 = {"x": RNG.standard_normal((1, 3, 32, 32)).astype(np.float32)}
IDS = {"input_ids": RNG.integers(0, 100, (1, 8))}
TEXT_DIMS = ["batch=1:2:1", "seq=2:16:8"]
CLASSES = {
    "small_swin": ("tests.importers.zoo:small_swin", ["x:batch,3,32,32"], ["batch=1:2:1"],
                   IMAGE32),
    "small_convnext": ("tests.importers.zoo:small_convnext", ["x:batch,3,32,32"],
                       ["batch=1:2:1"], IMAGE32),
    "small_resnext": ("tests.importers.zoo:small_resnext", ["x:batch,3,32,32"], ["batch=1:2:1"],
                      IMAGE32),
    "distilbert": ("tests.importers.zoo:distilbert",
                   ["input_ids:batch,seq:int64", "attention_mask:batch,seq:int64"], TEXT_DIMS,
                   dict(IDS, attention_mask=MASK)),
    "hf_gpt2": ("tests.importers.zoo:hf_gpt2", ["input_ids:batch,seq:int64"], TEXT_DIMS, IDS),
}


def torch_outputs(factory: str, inputs: dict) -> list:
    """The PyTorch model's outputs (float32, eval mode) for the example inputs."""
    import importlib

    import torch
    module, _, attr = factory.partition(":")
    model = getattr(importlib.import_module(module), attr)().eval()
    with torch.no_grad():
        out = model(*(torch.from_numpy(v) for v in inputs.values()))
    if hasattr(out, "to_tuple"):  # transformers' ModelOutput
        out = out.to_tuple()
    return [t.numpy() for t in (out if isinstance(out, (list, tuple)) else [out])]


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| over max |want|: the measure the issue's 1e-5 bound is in."""
    return float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())


# the zoo's sizes of those classes, checked in the reference executor only (CLASSES builds
# their code paths for cpu): factory, --args, --input texts, --dim texts, example inputs
LIBRARY = {
    "swin_t": ("tests.importers.zoo:torchvision_model", {"name": "swin_t"},
               ["x:batch,3,32,32"], ["batch=1:2:1"], IMAGE32),
    "convnext_tiny": ("tests.importers.zoo:torchvision_model", {"name": "convnext_tiny"},
                      ["x:batch,3,32,32"], ["batch=1:2:1"], IMAGE32),
    "shufflenet_v2_x0_5": ("tests.importers.zoo:torchvision_model",
                           {"name": "shufflenet_v2_x0_5"}, ["x:batch,3,32,32"], ["batch=1:2:1"],
                           IMAGE32),
}
