"""The transformers models of the zoo's `outside` set (zoo_specs.OUTSIDE): decoders, a mixture
of experts, audio and vision encoders at published or LLaMA-like sizes, random init, none of
which a kernel or profile entry of ours was tuned for. Each returns one tensor (the last hidden
state) from one input, as `ait-build import torch` takes a factory."""
import torch

from ait_build.bench.zoo_models import HiddenStates


class LastHidden(torch.nn.Module):
    """model(**{name: x}).last_hidden_state: an encoder over pixels or audio."""

    def __init__(self, model, name: str):
        super().__init__()
        self.model, self.name = model, name

    def forward(self, x):
        return self.model(**{self.name: x}).last_hidden_state


def _decoder(config_cls, model_cls):
    config = config_cls(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                        num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                        max_position_embeddings=2048, use_cache=False)
    return HiddenStates(model_cls(config))


def llama_small():
    """A LLaMA-shaped decoder: RMSNorm, RoPE, SiLU-gated MLP, grouped KV heads."""
    from transformers import LlamaConfig, LlamaModel
    return _decoder(LlamaConfig, LlamaModel)


def qwen2_small():
    """Qwen2-shaped: as LLaMA with biases on q, k and v."""
    from transformers import Qwen2Config, Qwen2Model
    return _decoder(Qwen2Config, Qwen2Model)


def mixtral_small():
    """A Mixtral-shaped MoE decoder: 8 experts, 2 a token, 4 layers (the default expert path)."""
    from transformers import MixtralConfig, MixtralModel
    config = MixtralConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                           num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                           num_local_experts=8, num_experts_per_tok=2,
                           max_position_embeddings=2048, use_cache=False)
    return HiddenStates(MixtralModel(config))


def whisper_base_encoder():
    """Whisper-base's encoder over 30 s of 80 mel bins (input [batch, 80, 3000])."""
    from transformers import WhisperConfig, WhisperModel
    config = WhisperConfig(d_model=512, encoder_layers=6, encoder_attention_heads=8,
                           decoder_layers=6, decoder_attention_heads=8,
                           encoder_ffn_dim=2048, decoder_ffn_dim=2048)
    return LastHidden(WhisperModel(config).get_encoder(), "input_features")


def wav2vec2_base():
    """wav2vec2-base over raw audio (input [batch, samples]): conv feature extractor with a
    group norm, a grouped positional conv of 128 taps, 12 encoder layers."""
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    return LastHidden(Wav2Vec2Model(Wav2Vec2Config()), "input_values")


def clip_vision_b32():
    from transformers import CLIPVisionConfig, CLIPVisionModel
    return LastHidden(CLIPVisionModel(CLIPVisionConfig()), "pixel_values")


def convnextv2_tiny():
    from transformers import ConvNextV2Config, ConvNextV2Model
    return LastHidden(ConvNextV2Model(ConvNextV2Config()), "pixel_values")


def mobilevit_small():
    from transformers import MobileViTConfig, MobileViTModel
    return LastHidden(MobileViTModel(MobileViTConfig()), "pixel_values")


def segformer_b0():
    from transformers import SegformerConfig, SegformerModel
    return LastHidden(SegformerModel(SegformerConfig()), "pixel_values")
