"""A user's own PyTorch model, as `ait-build import torch user_models:tiny_cnn` finds it in a
project (test_bench_imported.py copies this file into one): a conv, batch norm and ReLU, a
depthwise conv, a pool and a classifier; and a 1-d conv net over audio frames (whose weights
the import stores with a unit axis: test_bench_zoo.py)."""

from __future__ import annotations

import torch
from torch import nn


class TinyCNN(nn.Module):
    def __init__(self, width: int = 8, classes: int = 5):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(width)
        self.dw = nn.Conv2d(width, width, 3, padding=1, groups=width)
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = torch.nn.functional.max_pool2d(torch.relu(self.dw(x)), 2)
        return self.fc(x.mean(dim=(2, 3)))


def tiny_cnn(width: int = 8, classes: int = 5):
    torch.manual_seed(0)
    model = TinyCNN(width, classes)
    with torch.no_grad():  # running statistics that are not the identity
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 1.5)
    return model.eval()


def tiny_audio():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv1d(4, 8, 3, padding=1), nn.ReLU(), nn.Conv1d(8, 6, 1)).eval()
