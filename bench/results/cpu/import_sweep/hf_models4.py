"""Fourth HF sweep (README_sweep4.md): transformers families no earlier sweep imported, mostly
ones that route, sort, scatter or accumulate (MoE decoders, Switch, Reformer, time series),
in tiny random configurations (torch.manual_seed(0), 2 layers, hidden 64)."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models import Pixels  # noqa: E402
from hf_models2 import _m, _t, S  # noqa: E402

V = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
DEC = dict(vocab_size=1000, num_key_value_heads=2, **S)


class Kw(torch.nn.Module):
    """A model called with one tensor under the keyword `name`, its first output."""
    def __init__(self, m, name):
        super().__init__()
        self.m, self.name = m, name

    def forward(self, x):
        return self.m(**{self.name: x})[0]


class Series(torch.nn.Module):
    """TimeSeriesTransformer / Informer / Autoformer on past_values [batch, past] and
    future_values [batch, pred]; one time feature (position / 100), every value observed; the
    decoder's last hidden state."""
    def __init__(self, m, past, pred):
        super().__init__()
        self.m = m
        self.register_buffer("tp", (torch.arange(past, dtype=torch.float32) / 100)[None, :, None])
        self.register_buffer("tf", (torch.arange(past, past + pred, dtype=torch.float32) / 100)[None, :, None])

    def forward(self, past_values, future_values):
        b = past_values.shape[0]
        out = self.m(past_values=past_values, past_time_features=self.tp.expand(b, -1, -1),
                     past_observed_mask=torch.ones_like(past_values),
                     future_values=future_values, future_time_features=self.tf.expand(b, -1, -1))
        return out.last_hidden_state


class Encoder(torch.nn.Module):
    """An encoder-decoder model's encoder on input_ids, its last hidden state."""
    def __init__(self, m):
        super().__init__()
        self.m = m.get_encoder()

    def forward(self, input_ids):
        return self.m(input_ids=input_ids).last_hidden_state


TS = dict(prediction_length=8, context_length=16, lags_sequence=[1, 2, 3], num_time_features=1,
          d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
          decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64)

# routers / mixture of experts
def switch_encoder(): return _t("SwitchTransformersConfig", "SwitchTransformersEncoderModel", vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, num_experts=4, encoder_sparse_step=1)
def mixtral(): return _t("MixtralConfig", "MixtralModel", num_local_experts=4, num_experts_per_tok=2, **DEC)
def qwen2_moe(): return _t("Qwen2MoeConfig", "Qwen2MoeModel", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64, shared_expert_intermediate_size=64, **DEC)
def qwen3_moe(): return _t("Qwen3MoeConfig", "Qwen3MoeModel", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64, head_dim=16, **DEC)
def olmoe(): return _t("OlmoeConfig", "OlmoeModel", num_experts=4, num_experts_per_tok=2, **DEC)
def dbrx(): return _t("DbrxConfig", "DbrxModel", vocab_size=1000, d_model=64, n_heads=4, n_layers=2, max_seq_len=128, attn_config={"kv_n_heads": 2, "rope_theta": 10000.0, "clip_qkv": 8.0}, ffn_config={"ffn_hidden_size": 128, "moe_num_experts": 4, "moe_top_k": 2})
def phimoe(): return _t("PhimoeConfig", "PhimoeModel", num_local_experts=4, num_experts_per_tok=2, **DEC)
def granitemoe(): return _t("GraniteMoeConfig", "GraniteMoeModel", num_local_experts=4, num_experts_per_tok=2, **DEC)
def jetmoe(): return _t("JetMoeConfig", "JetMoeModel", vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_key_value_heads=2, kv_channels=16, intermediate_size=128, num_local_experts=4, num_experts_per_tok=2)
def deepseek_v3(): return _t("DeepseekV3Config", "DeepseekV3Model", vocab_size=1000, hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=2, first_k_dense_replace=1, n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=2, n_group=2, topk_group=1, num_attention_heads=4, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16)
def gpt_oss(): return _t("GptOssConfig", "GptOssModel", vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=64, num_local_experts=4, num_experts_per_tok=2, sliding_window=8)
# text encoders
def reformer(): return _t("ReformerConfig", "ReformerModel", vocab_size=1000, hidden_size=64, num_attention_heads=2, attention_head_size=32, attn_layers=["local", "lsh"], feed_forward_size=128, axial_pos_embds=False, max_position_embeddings=64, local_attn_chunk_length=8, lsh_attn_chunk_length=8, num_buckets=4, num_hashes=1, is_decoder=False, hash_seed=0)
def big_bird_sparse(): return _t("BigBirdConfig", "BigBirdModel", vocab_size=1000, attention_type="block_sparse", block_size=2, num_random_blocks=1, max_position_embeddings=128, **S)
def led_encoder(): return Encoder(_m("LEDConfig", "LEDModel", vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, attention_window=[8, 8], max_encoder_position_embeddings=128, max_decoder_position_embeddings=128))
def data2vec_text(): return _t("Data2VecTextConfig", "Data2VecTextModel", vocab_size=1000, **S)
def fnet(): return _t("FNetConfig", "FNetModel", vocab_size=1000, use_tpu_fourier_optimizations=False, hidden_size=64, num_hidden_layers=2, intermediate_size=128)
def m2m100_encoder(): return Encoder(_m("M2M100Config", "M2M100Model", vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=128))
def longt5_tglobal(): return _t("LongT5Config", "LongT5EncoderModel", vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, local_radius=4, global_block_size=4, encoder_attention_type="transient-global")
def umt5_encoder(): return _t("UMT5Config", "UMT5EncoderModel", vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
def flaubert(): return _t("FlaubertConfig", "FlaubertModel", vocab_size=1000, emb_dim=64, n_layers=2, n_heads=4, max_position_embeddings=128)
def ctrl(): return _t("CTRLConfig", "CTRLModel", vocab_size=1000, n_embd=64, dff=128, n_layer=2, n_head=4, n_positions=128)
def mra(): return _t("MraConfig", "MraModel", vocab_size=1000, max_position_embeddings=128, **S)
# time series (past_values [batch, 19] = context 16 + lags 3, future_values [batch, 8])
def time_series_transformer(): return Series(_m("TimeSeriesTransformerConfig", "TimeSeriesTransformerModel", **TS), 19, 8)
def informer(): return Series(_m("InformerConfig", "InformerModel", **TS), 19, 8)
def informer_full(): return Series(_m("InformerConfig", "InformerModel", attention_type="full", distil=False, **TS), 19, 8)
def autoformer(): return Series(_m("AutoformerConfig", "AutoformerModel", moving_average=5, **TS), 19, 8)
def patchtst(): return Kw(_m("PatchTSTConfig", "PatchTSTModel", num_input_channels=3, context_length=32, patch_length=8, patch_stride=8, d_model=32, num_attention_heads=4, num_hidden_layers=2, ffn_dim=64), "past_values")
def patchtsmixer(): return Kw(_m("PatchTSMixerConfig", "PatchTSMixerModel", num_input_channels=3, context_length=32, patch_length=8, patch_stride=8, d_model=16, num_layers=2), "past_values")
# vision / multimodal towers
def perceiver(): return Kw(_m("PerceiverConfig", "PerceiverModel", num_latents=16, d_latents=32, d_model=32, num_blocks=1, num_self_attends_per_block=2, num_self_attention_heads=2, num_cross_attention_heads=1), "inputs")
def owlvit_vision(): return Pixels(_m("OwlViTVisionConfig", "OwlViTVisionModel", image_size=64, patch_size=8, **V))
def blip_vision(): return Pixels(_m("BlipVisionConfig", "BlipVisionModel", image_size=64, patch_size=8, **V))
def focalnet(): return Pixels(_m("FocalNetConfig", "FocalNetModel", image_size=64, embed_dim=16, depths=[1, 1, 1, 1]))
# audio (raw samples, fixed length)
def wav2vec2_conformer(): return Kw(_m("Wav2Vec2ConformerConfig", "Wav2Vec2ConformerModel", conv_dim=[32, 32], conv_stride=[5, 2], conv_kernel=[10, 3], num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, position_embeddings_type="rotary", conv_depthwise_kernel_size=7, **V), "input_values")
def sew_d(): return Kw(_m("SEWDConfig", "SEWDModel", conv_dim=[32, 32], conv_stride=[5, 2], conv_kernel=[10, 3], num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, squeeze_factor=2, max_position_embeddings=64, position_buckets=32, **V), "input_values")
def ast(): return Kw(_m("ASTConfig", "ASTModel", max_length=64, num_mel_bins=32, patch_size=16, frequency_stride=10, time_stride=10, **V), "input_values")
# the same MoE decoders with transformers' other experts implementations (the default is
# "grouped_mm": tokens sorted by expert, histc counts, grouped matmul over offsets)
def mixtral_batched(): return _t("MixtralConfig", "MixtralModel", num_local_experts=4, num_experts_per_tok=2, experts_implementation="batched_mm", **DEC)
def mixtral_eager(): return _t("MixtralConfig", "MixtralModel", num_local_experts=4, num_experts_per_tok=2, experts_implementation="eager", **DEC)
def qwen2_moe_batched(): return _t("Qwen2MoeConfig", "Qwen2MoeModel", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64, shared_expert_intermediate_size=64, experts_implementation="batched_mm", **DEC)


class WithMask(torch.nn.Module):
    """input_ids with an all-ones attention_mask (SwitchTransformers' encoder subscripts a None
    mask when traced: modeling_switch_transformers.py:761), the last hidden state."""
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids):
        return self.m(input_ids=input_ids, attention_mask=torch.ones_like(input_ids))[0]


def switch_encoder_mask(): return WithMask(switch_encoder().model)


def switch_encoder_patched():
    """switch_encoder_mask with each router's `self.classifier.to(self.dtype)` (in its forward:
    torch.export cannot swap a Linear's weight while tracing) made a no-op: float32 already."""
    m = switch_encoder_mask()
    for mod in m.modules():
        if type(mod).__name__ == "SwitchTransformersTop1Router":
            mod.classifier.to = (lambda c: (lambda *a, **k: c))(mod.classifier)
    return m


def deepseek_v3_batched():
    m = deepseek_v3()
    m.model.config._experts_implementation = "batched_mm"
    return m


def phimoe_batched():
    m = phimoe()
    m.model.config._experts_implementation = "batched_mm"
    return m


def reformer_fixed(): return reformer()  # imported at a static length (32)
def longt5_local(): return _t("LongT5Config", "LongT5EncoderModel", vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, local_radius=4, encoder_attention_type="local")
def longt5_tglobal_fixed(): return longt5_tglobal()  # imported at a static length (32)


def gpt_oss_batched():
    m = gpt_oss()
    m.model.config._experts_implementation = "batched_mm"
    return m


def longt5_local_mask(): return WithMask(longt5_local().model)  # traced, it reads a None mask's shape
def led_encoder_fixed(): return led_encoder()  # imported at a static length (32, 4 windows)
def longt5_local_fixed(): return longt5_local_mask()  # imported at a static length (32)


class MaeNoise(torch.nn.Module):
    """ViT-MAE with its masking noise a fixed buffer (per-patch, the same for every image)
    instead of torch.rand: the argsort/gather of its random masking over 64 patches stays."""
    def __init__(self, m, patches):
        super().__init__()
        self.m = m
        g = torch.Generator().manual_seed(1)
        self.register_buffer("noise", torch.rand(1, patches, generator=g))

    def forward(self, pixel_values):
        b = pixel_values.shape[0]
        return self.m(pixel_values=pixel_values, noise=self.noise.expand(b, -1)).last_hidden_state


def vit_mae_noise(): return MaeNoise(_m("ViTMAEConfig", "ViTMAEModel", image_size=64, patch_size=8, mask_ratio=0.75, **V), 64)
def nllb_moe_encoder(): return Encoder(_m("NllbMoeConfig", "NllbMoeModel", vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_experts=4, expert_capacity=8, encoder_sparse_step=1, decoder_sparse_step=1, max_position_embeddings=128))
def big_bird_sparse_fixed(): return big_bird_sparse()  # the block-sparse plan fixes the length: 32


def nllb_moe_patched():
    """nllb_moe_encoder with each router's `self.classifier.to(self.dtype)` a no-op (as
    switch_encoder_patched)."""
    m = nllb_moe_encoder()
    for mod in m.modules():
        if "Router" in type(mod).__name__ and hasattr(mod, "classifier"):
            mod.classifier.to = (lambda c: (lambda *a, **k: c))(mod.classifier)
    return m


def _batched(factory):
    m = factory()
    m.model.config._experts_implementation = "batched_mm"
    return m


def olmoe_batched(): return _batched(olmoe)
def granitemoe_batched(): return _batched(granitemoe)
def qwen3_moe_batched(): return _batched(qwen3_moe)
