"""The reference executor against PyTorch on the zoo: each spec runs with the state_dict of its
PyTorch twin (random weights, randomized norms) and must give PyTorch's float32 outputs.

The float16 specs run in float32 here (the reference always computes in float32); what is checked
is that the spec is the same function as the PyTorch model, name for name.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("transformers")

import torch_models  # noqa: E402  (tests/ is on sys.path; needs torch)

from ait_build.ir.graph import WEIGHT  # noqa: E402
from ait_build.ops.reference import run_reference  # noqa: E402
from ait_build.spec.model import load_model  # noqa: E402
from ait_build.ir.weights import save_safetensors  # noqa: E402

pytestmark = pytest.mark.torch
SPECS = Path(__file__).resolve().parents[2] / "specs"
RTOL = 1e-4  # of the output's largest magnitude
BN_COUNTERS = r".*\.num_batches_tracked"


def image(batch, size):
    return {"image": np.random.default_rng(0).standard_normal((batch, size, size, 3), np.float32)}


def nchw(inputs):
    return torch.from_numpy(inputs["image"]).permute(0, 3, 1, 2).contiguous()


def bert_inputs(batch, seq):
    rng = np.random.default_rng(0)
    mask = np.ones((batch, seq), np.int64)
    mask[-1, seq // 2:] = 0  # the last sequence is padded: the mask must matter
    return {"input_ids": rng.integers(0, 100, (batch, seq)),
            "token_type_ids": rng.integers(0, 2, (batch, seq)), "attention_mask": mask}


def bert_outputs(model, inputs):
    out = model(**{k: torch.from_numpy(v) for k, v in inputs.items()})
    return {"last_hidden_state": out.last_hidden_state, "pooler_output": out.pooler_output}


# spec -> (twin builder, inputs, PyTorch outputs by our output names, state_dict names we skip)
CASES = {
    "tiny_cnn": (torch_models.tiny_cnn, image(2, 32),
                 lambda m, x: {"fc": m(nchw(x))}, BN_COUNTERS),
    "tiny_vit": (torch_models.tiny_vit, image(2, 32),
                 lambda m, x: {"heads.head": m(nchw(x))}, None),
    "tiny_bert": (torch_models.tiny_bert, bert_inputs(2, 24), bert_outputs, None),
    "resnet50": (torch_models.resnet50, image(1, 224),
                 lambda m, x: {"fc": m(nchw(x))}, BN_COUNTERS),
    "vit_b16": (torch_models.vit, image(1, 224),
                lambda m, x: {"heads.head": m(nchw(x))}, None),
    # the spec is BertModel's encoder alone: the embeddings and the pooler stay unused
    "bert_base": (torch_models.bert,
                  {"hidden_states": np.random.default_rng(0).standard_normal((1, 128, 768), np.float32)},
                  lambda m, x: {"last_hidden_state":
                                m.encoder(torch.from_numpy(x["hidden_states"])).last_hidden_state},
                  r"(embeddings|pooler)\..*"),
}


def spec_weight_names(spec: Path) -> set:
    graph = load_model(str(spec))
    return {t.name for t in graph.tensors.values() if t.kind == WEIGHT}


@pytest.mark.parametrize("name", list(CASES))
def test_reference_matches_torch(name, tmp_path):
    build, inputs, torch_outputs, skipped = CASES[name]
    spec = SPECS / f"{name}.yaml"
    model = build()
    arrays = torch_models.state_dict_arrays(model)
    needed = spec_weight_names(spec)

    missing = needed - set(arrays)
    assert not missing, f"{name}: the spec reads names the state_dict lacks: {sorted(missing)[:5]}"
    unused = sorted(set(model.state_dict()) - needed)
    unexpected = [n for n in unused if not (skipped and re.fullmatch(skipped, n))]
    assert not unexpected, f"{name}: state_dict names the spec does not read: {unexpected[:5]}"

    weights = tmp_path / f"{name}.safetensors"
    save_safetensors({k: arrays[k] for k in needed}, str(weights))
    ours = run_reference(load_model(str(spec), weights=str(weights)), inputs)
    with torch.no_grad():
        theirs = {k: v.numpy() for k, v in torch_outputs(model, inputs).items()}

    assert set(ours) == set(theirs)
    for out, want in theirs.items():
        got = ours[out]
        assert got.shape == want.shape, f"{name}.{out}: {got.shape} vs {want.shape}"
        scale = float(np.abs(want).max())
        err = float(np.abs(got - want).max())
        print(f"{name}.{out}: max abs err {err:.3g}, relative to max |out| {scale:.3g}: "
              f"{err / scale:.3g} ({len(unused)} state_dict names unused)")
        assert scale > 0 and np.isfinite(got).all()
        assert err <= RTOL * scale, f"{name}.{out}: max abs err {err:.3g} > {RTOL} * {scale:.3g}"
