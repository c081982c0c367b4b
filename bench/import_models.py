"""The seed models as `ait-build import torch` factories (docs/import.md, "On the GPU"):
torchvision's resnet50 and vit_b_16 and transformers' BERT-base encoder, with weights drawn from a
fixed seed so that the check regenerates the same module to compare against."""

from __future__ import annotations

import torch


def _seeded(make, seed: int = 0):
    torch.manual_seed(seed)
    return make().eval()


def resnet50():
    import torchvision
    return _seeded(lambda: torchvision.models.resnet50(weights=None))


def vit_b16():
    import torchvision

    def make():
        model = torchvision.models.vit_b_16(weights=None)
        # torchvision zero-fills the classifier head, so every output would be 0 and the
        # check's relative errors undefined
        torch.nn.init.normal_(model.heads.head.weight, std=0.02)
        torch.nn.init.normal_(model.heads.head.bias, std=0.02)
        return model
    return _seeded(make)


class BertEncoder(torch.nn.Module):
    """BertModel's encoder on precomputed embeddings, as specs/bert_base.yaml has it."""

    def __init__(self):
        super().__init__()
        from transformers import BertConfig, BertModel
        self.encoder = BertModel(BertConfig(hidden_act="gelu", layer_norm_eps=1e-12)).encoder

    def forward(self, hidden_states):
        return self.encoder(hidden_states).last_hidden_state


def bert_base():
    return _seeded(BertEncoder)
