"""Third HF sweep (scratch): vision and decoder families not swept before, tiny random configs."""
import torch
import sys
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from hf_models import Pixels
from hf_models2 import _m, _t, S

V = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
def _v(cfg, model, **kw): return Pixels(_m(cfg, model, **kw))

def segformer(): return _v("SegformerConfig", "SegformerModel", hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], num_attention_heads=[1, 2, 4, 8], decoder_hidden_size=64)
def dinov2(): return _v("Dinov2Config", "Dinov2Model", image_size=64, patch_size=8, **V)
def yolos(): return _v("YolosConfig", "YolosModel", image_size=[64, 64], patch_size=8, num_detection_tokens=10, **V)
def clip_vision(): return _v("CLIPVisionConfig", "CLIPVisionModel", image_size=64, patch_size=8, **V)
def siglip_vision(): return _v("SiglipVisionConfig", "SiglipVisionModel", image_size=64, patch_size=8, **V)
def levit(): return _v("LevitConfig", "LevitModel", image_size=64, hidden_sizes=[32, 64, 96], num_attention_heads=[1, 2, 3], depths=[1, 1, 1], key_dim=[8, 8, 8])
def pvt(): return _v("PvtConfig", "PvtModel", image_size=64, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], num_attention_heads=[1, 2, 4, 8])
def mobilenet_v2(): return _v("MobileNetV2Config", "MobileNetV2Model", image_size=64, depth_multiplier=0.35)
def efficientnet(): return _v("EfficientNetConfig", "EfficientNetModel", image_size=64, width_coefficient=0.25, depth_coefficient=0.25)
def swin2sr(): return _v("Swin2SRConfig", "Swin2SRModel", image_size=32, embed_dim=24, depths=[2], num_heads=[2], window_size=8, upscale=2)
def hiera(): return _v("HieraConfig", "HieraModel", image_size=[64, 64], embed_dim=16, num_heads=[1, 2, 4, 8], depths=[1, 1, 1, 1], patch_stride=[4, 4], query_stride=[2, 2], masked_unit_size=[8, 8])
def dpt_dinov2(): return _v("DepthAnythingConfig", "DepthAnythingForDepthEstimation", backbone_config={"model_type": "dinov2", "image_size": 56, "patch_size": 14, "hidden_size": 32, "num_hidden_layers": 4, "num_attention_heads": 2, "intermediate_size": 64, "out_features": ["stage1", "stage2", "stage3", "stage4"], "reshape_hidden_states": False}, neck_hidden_sizes=[16, 32, 48, 64], fusion_hidden_size=32, head_hidden_size=16, reassemble_hidden_size=32)
def detr(): return _v("DetrConfig", "DetrModel", use_timm_backbone=False, backbone_config={"model_type": "resnet", "embedding_size": 16, "hidden_sizes": [16, 32, 64, 128], "depths": [1, 1, 1, 1], "out_features": ["stage4"]}, use_pretrained_backbone=False, d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_queries=10)
def deformable_detr(): return _v("DeformableDetrConfig", "DeformableDetrModel", use_timm_backbone=False, backbone_config={"model_type": "resnet", "embedding_size": 16, "hidden_sizes": [16, 32, 64, 128], "depths": [1, 1, 1, 1], "out_features": ["stage2", "stage3", "stage4"]}, use_pretrained_backbone=False, d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_queries=10, num_feature_levels=3)
# decoders
def qwen2(): return _t("Qwen2Config", "Qwen2Model", vocab_size=1000, num_key_value_heads=2, **S)
def mistral(): return _t("MistralConfig", "MistralModel", vocab_size=1000, num_key_value_heads=2, **S)
def gpt_neox(): return _t("GPTNeoXConfig", "GPTNeoXModel", vocab_size=1000, **S)
def falcon(): return _t("FalconConfig", "FalconModel", vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4)
def mpt(): return _t("MptConfig", "MptModel", vocab_size=1000, d_model=64, n_layers=2, n_heads=4)
def rwkv(): return _t("RwkvConfig", "RwkvModel", vocab_size=1000, hidden_size=64, num_hidden_layers=2, attention_hidden_size=64, intermediate_size=128)
def mamba(): return _t("MambaConfig", "MambaModel", vocab_size=1000, hidden_size=64, num_hidden_layers=2, state_size=8)
def electra(): return _t("ElectraConfig", "ElectraModel", vocab_size=1000, embedding_size=32, **S)
def mpnet(): return _t("MPNetConfig", "MPNetModel", vocab_size=1000, **S)
def ibert(): return _t("IBertConfig", "IBertModel", vocab_size=1000, **S)


class Last(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, pixel_values):
        out = self.m(pixel_values=pixel_values)
        return out.last_hidden_state, out.encoder_last_hidden_state


def deformable_detr_h(): return Last(deformable_detr().m)
