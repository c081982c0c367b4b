"""F.fold / nn.Fold (aten.col2im) of windows that tile the output (importers/torch_layers.py
_col2im): MobileViT V2 unfolds its feature map into 2x2 patches and folds them back; a fold
whose stride is its kernel puts each tap back in place, a reshape and a permute (cropped by its
padding). Matches PyTorch through the reference executor; overlapping windows stay refused
(test_import_boundaries' nn.Fold)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import rel_error, torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
FACTORY = "tests.importers.test_fold:patches"


class Patches(torch.nn.Module):
    """Unfold into 2x2 patches, a linear over each patch's pixels, fold back (MobileViT V2);
    and a fold with padding, cropped."""

    def __init__(self):
        super().__init__()
        self.unfold = torch.nn.Unfold(2, stride=2)
        self.mix = torch.nn.Linear(16, 16)
        self.fold = torch.nn.Fold((8, 8), 2, stride=2)
        self.padded = torch.nn.Fold((6, 6), 4, padding=1, stride=4)

    def forward(self, x):  # [N, 4, 8, 8]
        p = self.unfold(x)  # [N, 16, 16]: 4 channels * 2*2 taps, 16 patches
        p = self.mix(p.transpose(1, 2)).transpose(1, 2)
        return self.fold(p), self.padded(p[:, :, :4])


def patches():
    torch.manual_seed(0)  # the same weights for the import and torch_outputs
    return Patches()


def test_fold_of_tiling_windows_matches_torch(tmp_path):
    _, _, built = import_case((FACTORY, ["x:batch,4,8,8"], ["batch=1:4:2"], None), tmp_path,
                              "fold")
    x = np.random.default_rng(2).standard_normal((3, 4, 8, 8)).astype(np.float32)
    want = torch_outputs(FACTORY, {"x": x})
    got = run_reference(built, {"x": x})
    for out, expected in zip(built.outputs, want):
        assert got[out].shape == expected.shape and rel_error(got[out], expected) < 1e-6, out


OVERLAPPING = "tests.importers.families:overlapping_folds"


def test_fold_of_overlapping_windows_matches_torch(tmp_path, build_spec):
    """Folds whose windows overlap (VOLO's kernel 3, stride 2, padding 1; kernel 2 at stride 1)
    or are dilated: one term per tap, summed, through the reference and a cpu build."""
    spec, _, built = import_case((OVERLAPPING, ["x:batch,8,6,4"], ["batch=1:4:2"], None),
                                 tmp_path, "overlapping_folds")
    model, _, _ = build_spec(spec, name="overlapping_folds")
    x = np.random.default_rng(3).standard_normal((3, 8, 6, 4)).astype(np.float32)
    want = torch_outputs(OVERLAPPING, {"x": x})
    for got in (run_reference(built, {"x": x}), model.run({"x": x})):
        for out, expected in zip(built.outputs, want):
            assert got[out].shape == expected.shape and rel_error(got[out], expected) < 1e-6, out
