"""PyTorch twins of the zoo specs, with random weights, for the fidelity tests.

Each builder returns an eval-mode float32 module whose state_dict names are what the matching spec
under specs/ reads. `randomize` moves every parameter and running statistic off its default so a
comparison cannot pass by accident (BatchNorm with mean 0 / var 1 or LayerNorm with weight 1 /
bias 0 would hide a wrong eps, a swapped weight or a missing affine term).
"""

from __future__ import annotations

import torch
from torch import nn


def randomize(model: nn.Module, seed: int = 0) -> nn.Module:
    gen = torch.Generator().manual_seed(seed)

    def normal(t, std, mean=0.0):
        t.normal_(mean, std, generator=gen)

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.BatchNorm2d, nn.LayerNorm)):
                normal(module.weight, 0.1, 1.0)
                normal(module.bias, 0.1)
            if isinstance(module, nn.BatchNorm2d):
                normal(module.running_mean, 0.1)
                module.running_var.uniform_(0.5, 1.5, generator=gen)
            elif isinstance(module, nn.Linear):
                # unit-scale projections give attention scores of order 1: a far from uniform softmax
                normal(module.weight, module.in_features ** -0.5)
                if module.bias is not None:
                    normal(module.bias, 0.1)
            elif isinstance(module, nn.MultiheadAttention):
                normal(module.in_proj_weight, module.embed_dim ** -0.5)
                normal(module.in_proj_bias, 0.1)
        for param in model.parameters():
            if not param.any():  # zero-initialized leftovers: ViT's class token, conv biases
                normal(param, 0.02)
    return model.eval()


def state_dict_arrays(model: nn.Module) -> dict:
    """name -> float32 NumPy array for every floating tensor of the state_dict."""
    return {k: v.detach().float().contiguous().numpy()
            for k, v in model.state_dict().items() if v.is_floating_point()}


# -- builders -------------------------------------------------------------------------------------

def resnet50() -> nn.Module:
    import torchvision
    torch.manual_seed(0)
    return randomize(torchvision.models.resnet50(), 1)


def vit(image: int = 224, patch: int = 16, layers: int = 12, heads: int = 12, hidden: int = 768,
        mlp: int = 3072, classes: int = 1000) -> nn.Module:
    from torchvision.models.vision_transformer import VisionTransformer
    torch.manual_seed(0)
    return randomize(VisionTransformer(image_size=image, patch_size=patch, num_layers=layers,
                                       num_heads=heads, hidden_dim=hidden, mlp_dim=mlp,
                                       num_classes=classes), 2)


def tiny_vit() -> nn.Module:
    return vit(image=32, patch=8, layers=2, heads=4, hidden=64, mlp=128, classes=10)


def bert(**config) -> nn.Module:
    """transformers.BertModel with eager attention (the pattern the spec writes out)."""
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    cfg = BertConfig(hidden_act="gelu", layer_norm_eps=1e-12, attn_implementation="eager", **config)
    return randomize(BertModel(cfg), 3)


def tiny_bert() -> nn.Module:
    return bert(vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=128, max_position_embeddings=64, type_vocab_size=2)


class TinyCNN(nn.Module):
    """The twin of specs/tiny_cnn.yaml; layer1 is torchvision's own Bottleneck."""

    def __init__(self):
        super().__init__()
        from torchvision.models.resnet import Bottleneck
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        downsample = nn.Sequential(nn.Conv2d(16, 32, 1, stride=2, bias=False), nn.BatchNorm2d(32))
        self.layer1 = nn.Sequential(Bottleneck(16, 8, stride=2, downsample=downsample))
        self.dw = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1, groups=32), nn.BatchNorm2d(32),
                                nn.ReLU())
        self.avgpool = nn.AvgPool2d(3, stride=2, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.avgpool(self.dw(self.layer1(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def tiny_cnn() -> nn.Module:
    torch.manual_seed(0)
    return randomize(TinyCNN(), 4)
