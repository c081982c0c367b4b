"""Factories of the public benchmark's transformers models (`ait-build bench-zoo`, zoo.py), for
`ait-build import torch ait_build.bench.zoo_models:NAME`: each builds the model at its published
size from a config written here (no download), with PyTorch's random initialization, and returns
the tensors a user reads (the last hidden state; RoBERTa's pooled output too). The torchvision
models need no factory of ours: `torchvision.models:resnext101_32x8d` is one.
"""

from __future__ import annotations

import torch


class HiddenStates(torch.nn.Module):
    """A transformers model called on input_ids alone, returning its last hidden state (and the
    pooled output where the model has a pooler), without the KV cache."""

    def __init__(self, model, pooled: bool = False, token_types: bool = False):
        super().__init__()
        self.model = model
        self.pooled = pooled
        self.token_types = token_types

    def forward(self, input_ids):
        # GPT-2's config has use_cache=False. RoBERTa's token types are all 0 (one type): given
        # as zeros, instead of its buffer gathered at the position ids (torch.gather along a
        # dim; the importer translates it now, the zeros keep the benchmark's figures comparable)
        extra = {"token_type_ids": torch.zeros_like(input_ids)} if self.token_types else {}
        out = self.model(input_ids=input_ids, **extra)
        if self.pooled:
            return out.last_hidden_state, out.pooler_output
        return out.last_hidden_state


def roberta_base():
    """roberta-base: 12 layers, hidden 768, its 50265-token vocabulary and 514 positions."""
    from transformers import RobertaConfig, RobertaModel
    config = RobertaConfig(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
                           pad_token_id=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5)
    return HiddenStates(RobertaModel(config), pooled=True, token_types=True)


def gpt2_medium():
    """gpt2-medium: 24 layers, hidden 1024, 16 heads, 1024 positions; no KV cache."""
    from transformers import GPT2Config, GPT2Model
    config = GPT2Config(n_embd=1024, n_layer=24, n_head=16, n_positions=1024, use_cache=False)
    return HiddenStates(GPT2Model(config))


def t5_base_encoder():
    """t5-base's encoder: 12 layers, d_model 768, 12 heads, relative position buckets."""
    from transformers import T5Config, T5EncoderModel
    config = T5Config(d_model=768, d_kv=64, d_ff=3072, num_layers=12, num_heads=12,
                      vocab_size=32128, use_cache=False)
    return HiddenStates(T5EncoderModel(config))
