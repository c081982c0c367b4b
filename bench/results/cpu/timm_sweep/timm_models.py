"""Factories for the timm sweep: timm models at random initialisation (no pretrained weights).

Each function returns `timm.create_model(NAME, pretrained=False).eval()` under
`torch.manual_seed(0)`; used as `ait-build import torch timm_models:NAME ...` with
PYTHONPATH=bench/results/cpu/timm_sweep. timm is not a project dependency.
"""
import timm
import torch

NAMES = [
    "resnet18d", "efficientnet_b0", "mobilenetv3_small_100", "ghostnet_100", "rexnet_100",
    "regnety_002", "convnext_atto", "efficientformer_l1", "mobilevit_xxs", "levit_128s",
    "deit_tiny_patch16_224", "vit_tiny_patch16_224", "swin_tiny_patch4_window7_224",
    "coat_lite_tiny", "fastvit_t8", "repvgg_a0", "dla34", "hrnet_w18_small",
    # second batch
    "maxvit_tiny_tf_224", "crossvit_tiny_240", "pvt_v2_b0", "edgenext_xx_small", "poolformer_s12",
    "xcit_nano_12_p16_224", "cait_xxs24_224", "resmlp_12_224", "mobilevitv2_050", "efficientvit_b0",
    "tiny_vit_5m_224", "mobileone_s0", "densenet121", "inception_v3", "mixer_s16_224",
    "gcvit_xxtiny", "coatnet_nano_rw_224", "nest_tiny",
]


def _make(name):
    def factory():
        torch.manual_seed(0)
        return timm.create_model(name, pretrained=False).eval()
    factory.__name__ = name
    return factory


# third sweep (README3.md): one small variant of each of 38 further families
NAMES3 = [
    "lcnet_050", "repghostnet_050", "mobilenetv4_conv_small", "efficientvit_m0", "hgnetv2_b0",
    "gernet_s", "starnet_s1", "mambaout_femto", "pit_ti_224", "repvit_m1", "ghostnetv2_100",
    "ese_vovnet19b_dw", "skresnet18", "resnest14d", "convit_tiny", "visformer_tiny",
    "efficientnetv2_rw_t", "dpn68", "selecsls42b", "res2net50_14w_8s", "nf_resnet26",
    "halonet26t", "cspresnet50", "deit3_small_patch16_224", "eva02_tiny_patch14_224",
    "hiera_tiny_224", "inception_next_tiny", "rdnet_tiny", "davit_tiny", "focalnet_tiny_srf",
    "mvitv2_tiny", "twins_svt_small", "swinv2_cr_tiny_ns_224", "tnt_s_patch16_224",
    "volo_d1_224", "nextvit_small", "tresnet_m", "sequencer2d_s",
]

for _n in NAMES + NAMES3:
    globals()[_n] = _make(_n)


def mixer_s16_224_head():
    """mixer_s16_224 with its classifier drawn N(0, 0.02): timm initialises MLP-Mixer's head to
    zeros, so at random init its output is exactly 0 and the comparison says nothing."""
    m = mixer_s16_224()
    torch.manual_seed(1)
    torch.nn.init.normal_(m.head.weight, std=0.02)
    return m


def hiera_tiny_224_head():
    """hiera_tiny_224 with its classifier drawn N(0, 0.02): timm initialises Hiera's head fc to
    zeros, so at random init its output is exactly 0 and the comparison says nothing."""
    m = hiera_tiny_224()
    torch.manual_seed(1)
    torch.nn.init.normal_(m.head.fc.weight, std=0.02)
    return m
