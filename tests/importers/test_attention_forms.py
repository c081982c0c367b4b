"""Attention as real modules write it, imported from PyTorch: every softmax(q k^T) v of each
becomes one multi_head_attention for the targets that fuse attention (passes/fuse_attention.py,
attention_heads.py, attention_batched.py), and the optimized graph computes what the module does.

Swin V2 (cosine attention, a logit scale per head), MaxViT (scores with two batch axes, its grid
attention taking the windows from after the sequence), DeBERTa-v2 (heads in the batch, relative
terms, the mask on a 4-d view), MPNet (two bias terms), BLOOM (qkv interleaved per head, ALiBi)
torch.nn.MultiheadAttention called the default way, both layouts (heads in the batch, the
in-projection sliced three ways), and scaled_dot_product_attention over 5-d and 3-d q, k, v."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import rel_error  # noqa: E402
from test_families import FAMILIES, IMAGE, TEXT, _ids, _model, _outputs, import_family  # noqa: E402

from ait_build.ops.reference import run_reference  # noqa: E402
from ait_build.passes import optimize  # noqa: E402
from ait_build.pipeline import find_target  # noqa: E402

pytestmark = pytest.mark.torch
SEQ = {"x": np.random.default_rng(40).standard_normal((1, 6, 32)).astype(np.float32)}
F = "tests.importers.families:"
CASES = {  # name -> (family case, attentions)
    "swin_v2": (FAMILIES["swin_v2"], 4),
    "maxvit": (FAMILIES["maxvit"], 4),
    "deberta": (FAMILIES["deberta"], 2),
    "mpnet": ((F + "mpnet", ["input_ids:batch,seq:int64"], TEXT, _ids()), 2),
    "bloom": ((F + "bloom", ["input_ids:batch,seq:int64"], TEXT, _ids()), 2),
    "mha_block": ((F + "mha_block", ["x:batch,seq,32"], IMAGE + ["seq=1:8:6"], SEQ), 1),
    "mha_seq_first": ((F + "mha_seq_first", ["x:seq,batch,32"], IMAGE + ["seq=1:8:6"],
                       {"x": SEQ["x"].transpose(1, 0, 2).copy()}), 1),
    "sdpa_ranks": ((F + "sdpa_ranks", ["x:batch,3,6,16"], IMAGE, {"x": np.random.default_rng(
        42).standard_normal((1, 3, 6, 16)).astype(np.float32)}), 3),
}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """name -> the case's imported graph, exported once for both targets (optimize copies it)."""
    graphs = {}

    def get(name: str):
        if name not in graphs:
            _, graphs[name] = import_family(CASES[name][0], "torch",
                                            tmp_path_factory.mktemp(name), name)
        return graphs[name]

    return get


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("target", ["h200", "cpu"])
def test_every_attention_is_fused_and_computes_the_module(name, target, imported):
    case, attentions = CASES[name]
    optimized, _ = optimize(imported(name), find_target(target))
    ops = [n.op for n in optimized.nodes]
    assert ops.count("multi_head_attention") == attentions and "softmax" not in ops
    feed = case[3]
    with torch.no_grad():
        want = _outputs(_model(case[0])(*(torch.from_numpy(v) for v in feed.values())))
    got = run_reference(optimized, feed)
    for out, expected in zip(optimized.outputs, want):
        assert rel_error(got[out], expected) < 1e-5, (out, rel_error(got[out], expected))
