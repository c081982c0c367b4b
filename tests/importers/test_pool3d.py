"""3-d pools (S3D: importers/composites.py pool3d): max_pool3d and avg_pool3d over frames
[N, C, T, H, W] as the 2-d pool of each frame and the time window's taps combined (max, or
mean with the padding counted), against PyTorch through the reference executor."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import rel_error, torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
FACTORY = "tests.importers.test_pool3d:pools"


class Pools(torch.nn.Module):
    """S3D's pools: (3, 3, 3) stride 1 padding 1, (1, 3, 3) stride (1, 2, 2), (2, 7, 7)
    average; and an average with a padded, strided time window."""

    def __init__(self):
        super().__init__()
        self.branch = torch.nn.MaxPool3d(3, stride=1, padding=1)
        self.down = torch.nn.MaxPool3d((1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
        self.strided = torch.nn.MaxPool3d((2, 2, 2), stride=2)
        self.padded = torch.nn.AvgPool3d((3, 2, 2), stride=(2, 2, 2), padding=(1, 0, 0))
        self.last = torch.nn.AvgPool3d((2, 4, 4), stride=1)

    def forward(self, x):  # [N, 3, 6, 8, 8]
        y = self.down(self.branch(x) - 0.5)  # negative values near the padding
        return y, self.strided(x), self.padded(x), self.last(y)


def pools():
    return Pools()


def test_3d_pools_match_torch(tmp_path):
    _, _, built = import_case((FACTORY, ["x:batch,3,6,8,8"], ["batch=1:4:2"], None), tmp_path,
                              "pools")
    x = np.random.default_rng(4).standard_normal((2, 3, 6, 8, 8)).astype(np.float32)
    want = torch_outputs(FACTORY, {"x": x})
    got = run_reference(built, {"x": x})
    for out, expected in zip(built.outputs, want):
        assert got[out].shape == expected.shape and rel_error(got[out], expected) < 1e-6, out
