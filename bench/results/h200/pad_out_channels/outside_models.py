"""Models outside the public benchmark with odd output widths (GPT-2's 50257 logits, 21-class
segmentation heads), random init; the text encoders are in ../../h100/outside_zoo_more/."""
import torch


class Logits(torch.nn.Module):
    """A language model called on input_ids alone, returning its logits (no cache)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).logits


def gpt2_lm():
    """GPT-2 small with its language-model head: logits over the 50257-token vocabulary."""
    from transformers import GPT2Config, GPT2LMHeadModel
    return Logits(GPT2LMHeadModel(GPT2Config(use_cache=False)))


class SegmentationOut(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def lraspp():
    from torchvision.models.segmentation import lraspp_mobilenet_v3_large
    return SegmentationOut(lraspp_mobilenet_v3_large(weights=None, weights_backbone=None))


def fcn_resnet50():
    from torchvision.models.segmentation import fcn_resnet50
    return SegmentationOut(fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False))
