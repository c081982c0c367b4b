"""Reproducer of the cpu build mismatch found by the third timm sweep (README3.md): a depthwise
conv whose output, after BN, is added to the conv's own input (timm efficientvit_msra.py's
`ResidualDrop(ConvNorm(dim, dim, 3, 1, 1, groups=dim))`). Import and compare:

    PYTHONPATH=bench/results/cpu/timm_sweep ait-build import torch dw_residual_repro:dwres \
        --input x:batch,16,14,14 --dim batch=1:8:2 -o /tmp/dwres.yaml
    PYTHONPATH=bench/results/cpu/timm_sweep ait-build bench /tmp/dwres.yaml --target cpu \
        --vs torch --runs 2 --batch 1

gave max|diff| 51, relative L2 1.6 at batch 1 (at e1499d9 and at a1c1501); the same without the
residual add matches (1e-7).
"""
import torch
from torch import nn

class DwRes(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(16, 16, 3, 1, 1, groups=16, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.pw = nn.Conv2d(16, 16, 1)
    def forward(self, x):
        y = self.pw(x)
        return y + self.bn(self.c(y))

def dwres():
    torch.manual_seed(0)
    m = DwRes().eval()
    with torch.no_grad():
        m.bn.running_mean.normal_(); m.bn.running_var.uniform_(0.5, 2); m.bn.weight.normal_(); m.bn.bias.normal_()
    return m
