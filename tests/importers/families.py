"""Small configurations of the model families issue 32 names (library classes where the library
has them, random weights, nothing downloaded), and `kitchen_sink`, one small module that uses
every op and pattern they brought, for the default test run. Each factory takes keyword
arguments only, as `ait-build import torch tests.importers.families:NAME` calls it."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def _seeded(seed: int):
    torch.manual_seed(seed)


class KitchenSink(nn.Module):
    """Every new op at least once: ceil_mode pools, each interpolate mode, rotary math, relative
    position buckets (abs, sign, log, ceil, min), repeat, vector norms, a weight-normed conv1d,
    group norm, conv3d, a transposed conv, einsum, per-element gather, LSTM and GRU, and the
    parameter-only subgraphs that fold at import (weight norm, a zeroed slice of a bias)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.up = nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)
        self.video = nn.Conv3d(4, 6, (3, 3, 3), stride=(1, 2, 2), padding=(1, 1, 1))
        self.audio = nn.utils.parametrizations.weight_norm(nn.Conv1d(6, 6, 3, padding=2,
                                                                     dilation=2))
        self.norm = nn.GroupNorm(3, 6)
        self.qkv = nn.Linear(6, 18)
        self.lstm = nn.LSTM(6, 5, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(10, 4)
        self.bias = nn.Parameter(torch.randn(6))
        self.table = nn.Parameter(torch.randn(9, 2))

    def forward(self, x):
        y = F.relu(self.conv(x))                                       # [b, 8, 12, 12]
        y = F.max_pool2d(y, 3, 2, ceil_mode=True)                      # [b, 8, 6, 6]
        y = y + F.avg_pool2d(y, 3, 1, 1, ceil_mode=True)
        y = F.avg_pool2d(y, 2, 2, ceil_mode=True, count_include_pad=False) \
            + F.interpolate(y, size=(3, 3), mode="bilinear", align_corners=True)  # [b, 8, 3, 3]
        y = self.up(y)                                                 # [b, 4, 6, 6]
        y = F.interpolate(y, scale_factor=2, mode="nearest") \
            + F.interpolate(y, size=(12, 12), mode="bilinear")        # [b, 4, 12, 12]
        v = self.video(y.unsqueeze(2).repeat(1, 1, 4, 1, 1))           # [b, 6, 4, 6, 6]
        pooled = F.adaptive_avg_pool3d(v, 1).flatten(1)                # [b, 6]
        s = v.flatten(3).mean(-1)                                      # [b, 6, 4]
        s = self.norm(F.gelu(self.audio(s)))                           # [b, 6, 4]
        t = s.transpose(1, 2)                                          # [b, 4, 6]
        pos = torch.arange(4)
        rel = pos[None, :] - pos[:, None]
        bucket = torch.sign(rel) * torch.ceil(torch.log(rel.abs().float() + 1) * 2)
        bucket = torch.min(bucket, torch.full_like(bucket, 2.0))       # [4, 4]
        angle = pos.float()[:, None] * torch.arange(1, 7).float()[None, :] * 0.1
        t = t * torch.cos(angle) + t.flip(-1) * torch.sin(angle)       # rotary-style
        q, k, w = self.qkv(t).chunk(3, dim=-1)
        scores = torch.einsum("bid,bjd->bij", q, k) + bucket
        t = torch.einsum("bij,bjd->bid", scores.softmax(-1), w)
        t = F.normalize(t, dim=-1) * torch.linalg.vector_norm(t, dim=-1, keepdim=True)
        bias = self.bias.clone()
        bias[2:4] = 0  # zero + slice_scatter of a parameter: folds at import
        order = torch.argsort(self.table[:, 0])[:4].expand(t.shape[0], 4).unsqueeze(-1)
        t = t + bias + torch.gather(t, 1, order.expand(-1, -1, 6))
        r, _ = self.lstm(t)                                            # [b, 4, 10]
        g, _ = self.gru(r.transpose(0, 1))                             # [4, b, 4]
        return torch.cat([g.transpose(0, 1).flatten(1), pooled], dim=1)


def kitchen_sink():
    _seeded(20)
    return KitchenSink().eval()
