"""Transformers models outside the public benchmark, at their published sizes, random init."""
import torch
from ait_build.bench.zoo_models import HiddenStates


def distilbert():
    from transformers import DistilBertConfig, DistilBertModel
    return HiddenStates(DistilBertModel(DistilBertConfig()))


def gpt2_small():
    from transformers import GPT2Config, GPT2Model
    return HiddenStates(GPT2Model(GPT2Config(use_cache=False)))


def albert_base():
    from transformers import AlbertConfig, AlbertModel
    return HiddenStates(AlbertModel(AlbertConfig(hidden_size=768, num_attention_heads=12,
                                                 intermediate_size=3072)))


def llama_small():
    """A LLaMA-shaped decoder: RMSNorm, RoPE, SiLU-gated MLP, grouped KV heads; no cache."""
    from transformers import LlamaConfig, LlamaModel
    config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                         num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                         max_position_embeddings=2048, use_cache=False)
    return HiddenStates(LlamaModel(config))
