"""Small transformers models (random init) for an import sweep."""
import torch
from ait_build.bench.zoo_models import HiddenStates


def _cfg(cls, **kw):
    return cls(**kw)


def bart_encoder():
    from transformers import BartConfig, BartModel
    m = BartModel(BartConfig(d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                             decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, vocab_size=1000))
    return HiddenStates(m.get_encoder())


def deberta_v2():
    from transformers import DebertaV2Config, DebertaV2Model
    return HiddenStates(DebertaV2Model(DebertaV2Config(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                                       intermediate_size=256, vocab_size=1000)))


def electra():
    from transformers import ElectraConfig, ElectraModel
    return HiddenStates(ElectraModel(ElectraConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                                   intermediate_size=256, embedding_size=64, vocab_size=1000)))


def mpnet():
    from transformers import MPNetConfig, MPNetModel
    return HiddenStates(MPNetModel(MPNetConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                               intermediate_size=256, vocab_size=1000)))


def opt():
    from transformers import OPTConfig, OPTModel
    return HiddenStates(OPTModel(OPTConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                           ffn_dim=256, vocab_size=1000, word_embed_proj_dim=128)))


def bloom():
    from transformers import BloomConfig, BloomModel
    return HiddenStates(BloomModel(BloomConfig(hidden_size=128, n_layer=2, n_head=4, vocab_size=1000)))


def gpt_neox():
    from transformers import GPTNeoXConfig, GPTNeoXModel
    return HiddenStates(GPTNeoXModel(GPTNeoXConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                                   intermediate_size=256, vocab_size=1000)))


def qwen2():
    from transformers import Qwen2Config, Qwen2Model
    return HiddenStates(Qwen2Model(Qwen2Config(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                               num_key_value_heads=2, intermediate_size=256, vocab_size=1000)))


def mistral():
    from transformers import MistralConfig, MistralModel
    return HiddenStates(MistralModel(MistralConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                                   num_key_value_heads=2, intermediate_size=256, vocab_size=1000)))


def phi():
    from transformers import PhiConfig, PhiModel
    return HiddenStates(PhiModel(PhiConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                           intermediate_size=256, vocab_size=1000)))


def xlm_roberta():
    from transformers import XLMRobertaConfig, XLMRobertaModel
    return HiddenStates(XLMRobertaModel(XLMRobertaConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                                         intermediate_size=256, vocab_size=1000)))


def gemma():
    from transformers import GemmaConfig, GemmaModel
    return HiddenStates(GemmaModel(GemmaConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                               num_key_value_heads=1, head_dim=32, intermediate_size=256, vocab_size=1000)))


class Pixels(torch.nn.Module):
    """A vision model called on pixel_values, its first output."""
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, pixel_values):
        out = self.m(pixel_values=pixel_values)
        return out[0]


def _t(cls_cfg, cls_model, **kw):
    import transformers
    return HiddenStates(getattr(transformers, cls_model)(getattr(transformers, cls_cfg)(**kw)))


def _v(cls_cfg, cls_model, **kw):
    import transformers
    return Pixels(getattr(transformers, cls_model)(getattr(transformers, cls_cfg)(**kw)))


SMALL = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256)
def clip_text(): return _t("CLIPTextConfig", "CLIPTextModel", vocab_size=1000, **SMALL)
def clip_vision(): return _v("CLIPVisionConfig", "CLIPVisionModel", image_size=64, patch_size=16, **SMALL)
def dinov2(): return _v("Dinov2Config", "Dinov2Model", image_size=64, patch_size=16, **SMALL)
def segformer(): return _v("SegformerConfig", "SegformerModel", num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[32, 64], num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2])
def mobilevit(): return _v("MobileViTConfig", "MobileViTModel", image_size=64)
def falcon(): return _t("FalconConfig", "FalconModel", vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4)
def gptj(): return _t("GPTJConfig", "GPTJModel", vocab_size=1000, n_embd=128, n_layer=2, n_head=4, rotary_dim=16)
def stablelm(): return _t("StableLmConfig", "StableLmModel", vocab_size=1000, **SMALL)
def mixtral(): return _t("MixtralConfig", "MixtralModel", vocab_size=1000, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, **SMALL)
def esm(): return _t("EsmConfig", "EsmModel", vocab_size=33, pad_token_id=1, **SMALL)
def convbert(): return _t("ConvBertConfig", "ConvBertModel", vocab_size=1000, embedding_size=128, **SMALL)
def squeezebert(): return _t("SqueezeBertConfig", "SqueezeBertModel", vocab_size=1000, embedding_size=128, **SMALL)
def funnel(): return _t("FunnelConfig", "FunnelBaseModel", vocab_size=1000, block_sizes=[1, 1], d_model=128, n_head=4, d_head=32, d_inner=256)
def deit(): return _v("DeiTConfig", "DeiTModel", image_size=64, patch_size=16, **SMALL)
def levit(): return _v("LevitConfig", "LevitModel", image_size=64)
def poolformer(): return _v("PoolFormerConfig", "PoolFormerModel", depths=[1, 1, 1, 1])
def swin_hf(): return _v("SwinConfig", "SwinModel", image_size=64, patch_size=4, embed_dim=32, depths=[1, 1], num_heads=[1, 2], window_size=4)
def convnext_hf(): return _v("ConvNextConfig", "ConvNextModel", hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1])


def conv1d_static():
    return torch.nn.Sequential(torch.nn.Conv1d(4, 8, 3), torch.nn.ReLU(), torch.nn.Conv1d(8, 8, 1)).eval()


def mobilevit_scaled():
    """MobileViT with weights drawn large enough that its output is not denormal (the HF init
    leaves the last hidden state near 1e-40)."""
    torch.manual_seed(0)
    return scaled(mobilevit())


def scaled(m):
    """`m` with its matrices and kernels drawn N(0, 1/fan_in)."""
    with torch.no_grad():
        for name, p in m.named_parameters():
            if p.dim() > 1:
                p.normal_(0, (1.0 / p[0].numel()) ** 0.5)
    return m
