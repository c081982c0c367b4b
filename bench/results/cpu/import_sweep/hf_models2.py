"""Small models (random init, 2 layers, hidden 64) for the second import sweep (README.md,
"Second sweep"): transformers classes no earlier sweep or test imported, and torchvision's
segmentation and video models."""
import torch
from ait_build.bench.zoo_models import HiddenStates
from hf_models import Pixels, scaled

S = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
D = dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
         decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=1000,
         max_position_embeddings=128)


def _m(cfg, model, **kw):
    import transformers
    torch.manual_seed(0)
    return getattr(transformers, model)(getattr(transformers, cfg)(**kw)).eval()


def _t(cfg, model, **kw): return HiddenStates(_m(cfg, model, **kw))
def _v(cfg, model, **kw): return Pixels(_m(cfg, model, **kw))


# text encoders
def roberta_prelayernorm(): return _t("RobertaPreLayerNormConfig", "RobertaPreLayerNormModel", vocab_size=1000, **S)
def xlnet(): return _t("XLNetConfig", "XLNetModel", vocab_size=1000, d_model=64, n_layer=2, n_head=4, d_inner=128, use_mems_eval=False)
def roformer(): return _t("RoFormerConfig", "RoFormerModel", vocab_size=1000, embedding_size=64, **S)
def longformer(): return _t("LongformerConfig", "LongformerModel", vocab_size=1000, attention_window=[8, 8], **S)
def big_bird(): return _t("BigBirdConfig", "BigBirdModel", vocab_size=1000, attention_type="original_full", **S)
def funnel(): return _t("FunnelConfig", "FunnelBaseModel", vocab_size=1000, block_sizes=[1, 1], d_model=64, n_head=4, d_head=16, d_inner=128)
def layoutlm(): return _t("LayoutLMConfig", "LayoutLMModel", vocab_size=1000, **S)
def canine(): return _t("CanineConfig", "CanineModel", downsampling_rate=4, num_hash_buckets=1024, **S)
def nystromformer(): return _t("NystromformerConfig", "NystromformerModel", vocab_size=1000, num_landmarks=4, segment_means_seq_len=16, **S)
# decoders
def phi3(): return _t("Phi3Config", "Phi3Model", vocab_size=1000, num_key_value_heads=2, pad_token_id=0, **S)
def gemma2(): return _t("Gemma2Config", "Gemma2Model", vocab_size=1000, num_key_value_heads=2, head_dim=16, **S)
def starcoder2(): return _t("Starcoder2Config", "Starcoder2Model", vocab_size=1000, num_key_value_heads=2, **S)
def olmo(): return _t("OlmoConfig", "OlmoModel", vocab_size=1000, pad_token_id=0, **S)
def cohere(): return _t("CohereConfig", "CohereModel", vocab_size=1000, num_key_value_heads=2, **S)
def gpt_bigcode(): return _t("GPTBigCodeConfig", "GPTBigCodeModel", vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=128)
def codegen(): return _t("CodeGenConfig", "CodeGenModel", vocab_size=1000, n_embd=64, n_layer=2, n_head=4, rotary_dim=8, n_positions=128)
def biogpt(): return _t("BioGptConfig", "BioGptModel", vocab_size=1000, **S)
def xglm(): return _t("XGLMConfig", "XGLMModel", vocab_size=1000, d_model=64, num_layers=2, attention_heads=4, ffn_dim=128)
# encoder halves of encoder-decoders, and whole ones on (input_ids, decoder_input_ids)
def mbart_encoder(): return HiddenStates(_m("MBartConfig", "MBartModel", **D).get_encoder())
def marian_encoder(): return HiddenStates(_m("MarianConfig", "MarianModel", pad_token_id=0, decoder_start_token_id=0, **D).get_encoder())
def pegasus_encoder(): return HiddenStates(_m("PegasusConfig", "PegasusModel", **D).get_encoder())


class Seq2Seq(torch.nn.Module):
    """An encoder-decoder on input_ids and decoder_input_ids, the decoder's last hidden state."""
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, decoder_input_ids):
        return self.m(input_ids=input_ids, decoder_input_ids=decoder_input_ids, use_cache=False).last_hidden_state


def bart(): return Seq2Seq(_m("BartConfig", "BartModel", **D))
def t5(): return Seq2Seq(_m("T5Config", "T5Model", vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, use_cache=False))
# vision (64x64)
I = dict(image_size=64, patch_size=16, **S)
def vit_mae(): return _v("ViTMAEConfig", "ViTMAEModel", mask_ratio=0.0, **I)
def data2vec_vision(): return _v("Data2VecVisionConfig", "Data2VecVisionModel", use_relative_position_bias=True, **I)
def swinv2(): return _v("Swinv2Config", "Swinv2Model", image_size=64, patch_size=4, embed_dim=32, depths=[1, 1], num_heads=[1, 2], window_size=4)
def mobilevitv2(): return _v("MobileViTV2Config", "MobileViTV2Model", image_size=64, width_multiplier=0.5)
def regnet_hf(): return _v("RegNetConfig", "RegNetModel", hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], groups_width=8, embedding_size=16)
def resnet_hf(): return _v("ResNetConfig", "ResNetModel", hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], embedding_size=16)
def cvt(): return _v("CvtConfig", "CvtModel", embed_dim=[16, 32, 64], num_heads=[1, 2, 4], depth=[3, 3, 3])
def bit(): return _v("BitConfig", "BitModel", hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], embedding_size=16, num_groups=8)
def glpn(): return _v("GLPNConfig", "GLPNForDepthEstimation", num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32], num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2], decoder_hidden_size=16)
def dpt(): return _v("DPTConfig", "DPTForDepthEstimation", image_size=64, patch_size=16, backbone_out_indices=[0, 1, 2, 3], num_hidden_layers=4, hidden_size=64, num_attention_heads=4, intermediate_size=128, neck_hidden_sizes=[16, 32, 64, 64], fusion_hidden_size=32, head_hidden_size=16)


class Out(torch.nn.Module):
    """A torchvision segmentation model's "out" tensor (it returns a dict)."""
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def _tv(name, **kw):
    import torchvision
    torch.manual_seed(0)
    return getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None, **kw).eval()


def fcn_resnet50(): return Out(_tv("fcn_resnet50", num_classes=4))
def deeplabv3_mobilenet_v3_large(): return Out(_tv("deeplabv3_mobilenet_v3_large", num_classes=4))
def lraspp_mobilenet_v3_large(): return Out(_tv("lraspp_mobilenet_v3_large", num_classes=4))
def canine_fixed(): return canine()
def funnel_fixed(): return funnel()


def mobilevitv2_scaled():
    """MobileViT V2 with weights drawn large enough that its output is not 0 (as
    hf_models.mobilevit_scaled)."""
    torch.manual_seed(0)
    return scaled(mobilevitv2())


def s3d_scaled():
    """torchvision's S3D (weights=None) with weights N(0, 2/fan_in): at its own init the
    features die out (about 1e-6) and the output is the classifier's bias."""
    import torchvision
    torch.manual_seed(0)
    m = scaled(torchvision.models.video.s3d(weights=None)).eval()
    with torch.no_grad():
        for _, p in m.named_parameters():
            if p.dim() > 1:
                p.mul_(2 ** 0.5)
    return m
