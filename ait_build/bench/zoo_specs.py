"""The public benchmark's models (zoo.py runs them): torchvision and transformers models at
their published sizes, what `ait-build import torch` is given for each, and the specs it writes
into build/zoo/, with `{random: {seed: 0}}` weights beside a small file of the constants the
import computed (docs/benchmarks.md, "Public models").
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

from ait_build.ir.weights import FLOAT_STORAGE

ZOO_DIR = os.path.join("build", "zoo")
SEED = 0


@dataclass(frozen=True)
class ZooModel:
    name: str
    factory: str  # MODULE:FACTORY
    inputs: tuple  # --input values
    dims: tuple  # --dim values
    batches: tuple  # batch 1 and the large batch
    seqs: tuple = ()  # text models: a case per batch and seq


def _cnn(name: str, size: int = 224, large: int = 128) -> ZooModel:
    return ZooModel(name, f"torchvision.models:{name}", (f"x:batch,3,{size},{size}",),
                    (f"batch=1:{large}:1",), (1, large))


def _text(name: str, large: int, seqs: tuple, max_seq: int,
          module: str = "ait_build.bench.zoo_models") -> ZooModel:
    return ZooModel(name, f"{module}:{name}", ("input_ids:batch,seq:int64",),
                    (f"batch=1:{large}:1", f"seq=1:{max_seq}:{seqs[0]}"), (1, large), seqs)


def _outside(name: str, input_: str, large: int) -> ZooModel:
    """A transformers encoder of outside_models.py over one tensor of static size."""
    return ZooModel(name, f"ait_build.bench.outside_models:{name}", (input_,),
                    (f"batch=1:{large}:1",), (1, large))


ZOO = (
    _cnn("mobilenet_v3_large"),
    _cnn("efficientnet_v2_s", size=384),  # its published evaluation size
    _cnn("convnext_small"),
    _cnn("regnet_x_3_2gf"),
    _cnn("resnext101_32x8d"),
    _cnn("swin_s", large=64),
    _cnn("densenet121"),
    _cnn("shufflenet_v2_x1_0"),
    _text("roberta_base", 32, (128,), 512),
    _text("gpt2_medium", 16, (128, 1024), 1024),
    # seq fixed at 128: T5's relative position buckets (abs, log, min of the position
    # differences) then fold into a constant at import time (a symbolic seq imports too; the
    # benchmark's figures were measured this way)
    ZooModel("t5_base_encoder", "ait_build.bench.zoo_models:t5_base_encoder",
             ("input_ids:batch,128:int64",), ("batch=1:32:1",), (1, 32)),
)
# The `outside` set (`zoo --set outside`): models no kernel, pass or profile entry of ours was
# tuned for, as a user brings them, to find what is slow before a user does. In the order they
# are timed: a run cut short by its budget still has the decoders and a CNN of each family.
OUTSIDE = (
    # its router sorts the routed rows by counting (ordering.py): every row of batch 16 x
    # seq 512 x 2 experts
    _text("mixtral_small", 16, (128,), 512, "ait_build.bench.outside_models"),
    _text("llama_small", 16, (128,), 512, "ait_build.bench.outside_models"),
    _outside("wav2vec2_base", "x:batch,16000", 32),
    _outside("whisper_base_encoder", "x:batch,80,3000", 16),
    _cnn("maxvit_t", large=64),
    _cnn("regnet_y_400mf"),
    _cnn("mobilenet_v3_small"),
    _outside("mobilevit_small", "x:batch,3,256,256", 128),
    _outside("convnextv2_tiny", "x:batch,3,224,224", 128),
    _outside("clip_vision_b32", "x:batch,3,224,224", 128),
    _cnn("swin_v2_t", large=64),
    _outside("segformer_b0", "x:batch,3,512,512", 16),
    _text("qwen2_small", 16, (128,), 512, "ait_build.bench.outside_models"),
    _cnn("squeezenet1_1"),
    _cnn("inception_v3", size=299),
)
SETS = {"public": ZOO, "outside": OUTSIDE}
BY_NAME = {m.name: m for m in ZOO + OUTSIDE}
# name -> seqs (None: the model's own), in the order they are timed: a run cut short by its
# budget still has a CNN and the transformer
QUICK = {"mobilenet_v3_large": None, "gpt2_medium": (128,), "efficientnet_v2_s": None,
         "convnext_small": None}


def spec_path(model: ZooModel) -> str:
    return os.path.join(ZOO_DIR, model.name + ".yaml")


def import_args(model: ZooModel) -> list:
    """The `ait-build import` command line of a zoo model."""
    args = ["import", "torch", model.factory, "--dtype", "float16", "-o", spec_path(model)]
    for value in model.inputs:
        args += ["--input", value]
    for value in model.dims:
        args += ["--dim", value]
    return args


def imported_already(model: ZooModel) -> bool:
    """Whether build/zoo holds this model's spec from the same source, with random weights."""
    from ait_build.bench.source_twin import read_source
    from ait_build.errors import AitError
    path = spec_path(model)
    if not os.path.isfile(path):
        return False
    try:
        source, doc = read_source(path)
    except AitError:
        return False
    return (source is not None and source.factory == model.factory
            and list(source.inputs) == list(model.inputs) and list(source.dims) == list(model.dims)
            and isinstance(doc.get("weights"), dict))


def import_one(name: str) -> int:
    """In a process of its own: import a zoo model (`ait-build import`, the command line as a
    program: bench sits below it), then give it random weights."""
    model = BY_NAME[name]
    os.makedirs(ZOO_DIR, exist_ok=True)
    code = subprocess.run([sys.executable, "-m", "ait_build", *import_args(model)]).returncode
    if code == 0:
        randomize_weights(spec_path(model), model)
    return code


def randomize_weights(spec: str, model: ZooModel) -> None:
    """Replaces the spec's weights file by `{random: {seed}}`, keeping in a small file of its own
    the tensors that are not the module's float parameters and buffers (constants the import
    computed, integer tables): bench loads the same random values into the PyTorch module."""
    from safetensors import safe_open
    from ait_build.bench.source_twin import rebuild_module, read_source
    from ait_build.importers.source import record_source
    from ait_build.ir.weights import save_safetensors
    source, doc = read_source(spec)
    weights = os.path.join(os.path.dirname(spec), doc["weights"])
    state = rebuild_module(source, model.name).state_dict()
    with safe_open(weights, framework="numpy") as f:
        kept = {k: f.get_tensor(k) for k in f.keys()
                if k not in state or f.get_slice(k).get_dtype() not in FLOAT_STORAGE}
    field_text = f"{{random: {{seed: {SEED}}}}}"
    if kept:
        constants = f"{model.name}.constants.safetensors"
        save_safetensors(kept, os.path.join(os.path.dirname(spec), constants))
        field_text = f"{{random: {{seed: {SEED}}}, file: {constants}}}"
    with open(spec, encoding="utf-8") as fh:
        text = fh.read()
    line = f"weights: {doc['weights']}\n"
    assert line in text, "the import writes `weights: FILE` on a line of its own"
    with open(spec, "w", encoding="utf-8") as fh:
        fh.write(text.replace(line, f"weights: {field_text}\n", 1))
    record_source(spec, _source_dict(source))
    os.unlink(weights)


def _source_dict(source) -> dict:
    out = {"importer": source.importer, "factory": source.factory, "args": dict(source.args),
           "inputs": list(source.inputs), "dims": list(source.dims), "dtype": source.dtype}
    if source.layouts:
        out["layouts"] = {k: list(v) for k, v in source.layouts.items()}
    return out
