"""Small configurations of the model families issue 32 names (library classes where the library
has them, random weights, nothing downloaded), and `kitchen_sink`, one small module that uses
every op and pattern they brought, for the default test run. Each factory takes keyword
arguments only, as `ait-build import torch tests.importers.families:NAME` calls it."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def _seeded(seed: int):
    torch.manual_seed(seed)


class KitchenSink(nn.Module):
    """Every new op at least once: ceil_mode pools, each interpolate mode, rotary math, relative
    position buckets (abs, sign, log, ceil, min), repeat, vector norms, a weight-normed conv1d,
    group norm, conv3d, a transposed conv, einsum, per-element gather, LSTM and GRU, and the
    parameter-only subgraphs that fold at import (weight norm, a zeroed slice of a bias)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.up = nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)
        self.video = nn.Conv3d(4, 6, (3, 3, 3), stride=(1, 2, 2), padding=(1, 1, 1))
        self.audio = nn.utils.parametrizations.weight_norm(nn.Conv1d(6, 6, 3, padding=2,
                                                                     dilation=2))
        self.norm = nn.GroupNorm(3, 6)
        self.qkv = nn.Linear(6, 18)
        self.lstm = nn.LSTM(6, 5, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(10, 4)
        self.bias = nn.Parameter(torch.randn(6))
        self.table = nn.Parameter(torch.randn(9, 2))

    def forward(self, x):
        y = F.relu(self.conv(x))                                       # [b, 8, 12, 12]
        y = F.max_pool2d(y, 3, 2, ceil_mode=True)                      # [b, 8, 6, 6]
        y = y + F.avg_pool2d(y, 3, 1, 1, ceil_mode=True)
        y = F.avg_pool2d(y, 2, 2, ceil_mode=True, count_include_pad=False) \
            + F.interpolate(y, size=(3, 3), mode="bilinear", align_corners=True)  # [b, 8, 3, 3]
        y = F.interpolate(self.up(y), scale_factor=2, mode="nearest")  # [b, 4, 12, 12]
        v = self.video(y.unsqueeze(2).repeat(1, 1, 4, 1, 1))           # [b, 6, 4, 6, 6]
        pooled = F.adaptive_avg_pool3d(v, 1).flatten(1)                # [b, 6]
        s = v.flatten(3).mean(-1)                                      # [b, 6, 4]
        s = self.norm(F.gelu(self.audio(s)))                           # [b, 6, 4]
        t = s.transpose(1, 2)                                          # [b, 4, 6]
        pos = torch.arange(4)
        rel = pos[None, :] - pos[:, None]
        bucket = torch.sign(rel) * torch.ceil(torch.log(rel.abs().float() + 1) * 2)
        bucket = torch.min(bucket, torch.full_like(bucket, 2.0))       # [4, 4]
        angle = pos.float()[:, None] * torch.arange(1, 7).float()[None, :] * 0.1
        t = t * torch.cos(angle) + t.flip(-1) * torch.sin(angle)       # rotary-style
        q, k, w = self.qkv(t).chunk(3, dim=-1)
        scores = torch.einsum("bid,bjd->bij", q, k) + bucket
        t = torch.einsum("bij,bjd->bid", scores.softmax(-1), w)
        t = F.normalize(t, dim=-1) * torch.linalg.vector_norm(t, dim=-1, keepdim=True)
        bias = self.bias.clone()
        bias[2:4] = 0  # zero + slice_scatter of a parameter: folds at import
        order = (torch.argsort(self.table[:, 0])[:4] % 4).expand(t.shape[0], 4).unsqueeze(-1)
        t = t + bias + torch.gather(t, 1, order.expand(-1, -1, 6))
        r, _ = self.lstm(t)                                            # [b, 4, 10]
        g, _ = self.gru(r.transpose(0, 1))                             # [4, b, 4]
        return torch.cat([g.transpose(0, 1).flatten(1), pooled], dim=1)


def kitchen_sink():
    _seeded(20)
    return KitchenSink().eval()


# -- the library classes, small ---------------------------------------------------------------

def squeezenet():
    """Caffe-era ceil_mode max pools."""
    import torchvision
    _seeded(21)
    return torchvision.models.squeezenet1_1(weights=None, num_classes=10).eval()


def fcn():
    """torchvision's FCN segmentation model on a small ResNet: its head's bilinear upsampling
    to the input size."""
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.resnet import BasicBlock, ResNet
    from torchvision.models.segmentation.fcn import FCN, FCNHead
    _seeded(22)
    backbone = IntermediateLayerGetter(ResNet(BasicBlock, [1, 1, 1, 1]), {"layer4": "out"})
    return FCN(backbone, FCNHead(512, 5)).eval()


class Decoder(nn.Module):
    """A U-Net-style decoder: transposed convs (with output_padding, groups), nearest and
    bilinear upsampling (align_corners both ways), skip concatenations."""

    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(8, 8, 4, stride=2, padding=1, groups=2)
        self.up2 = nn.ConvTranspose2d(16, 4, 3, stride=2, padding=1, output_padding=1)
        self.mix = nn.Conv2d(8, 3, 3, padding=1)

    def forward(self, x):
        a = F.relu(self.up1(x))                                                   # 2x
        a = torch.cat([a, F.interpolate(x, scale_factor=2, mode="nearest")], dim=1)
        b = self.up2(a)                                                           # 4x
        c = F.interpolate(x[:, :4], size=b.shape[-2:], mode="bilinear", align_corners=True)
        return self.mix(torch.cat([b, c], 1)) + F.interpolate(b[:, :3], scale_factor=1.0,
                                                               mode="bilinear")


def decoder():
    _seeded(23)
    return Decoder().eval()


class Transposed(nn.Module):
    """Transposed convolutions of 1 and 3 dims (vocoders' upsamplers, 3-d U-Nets): strides,
    output_padding, groups, dilation, and padding beyond what the kernel reaches."""

    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose1d(4, 6, 4, stride=2, padding=1, groups=2)
        self.up1b = nn.ConvTranspose1d(6, 3, 3, stride=3, padding=5, output_padding=1,
                                       dilation=2)
        self.up3 = nn.ConvTranspose3d(2, 4, (2, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1),
                                      output_padding=(0, 1, 0))

    def forward(self, x, v):
        return self.up1b(F.gelu(self.up1(x))), self.up3(v)


def transposed():
    _seeded(30)
    return Transposed().eval()


def _transformers(config_class: str, model_class: str, seed: int, **config):
    import transformers
    _seeded(seed)
    return getattr(transformers, model_class)(getattr(transformers, config_class)(**config)).eval()


TEXT = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=64)


def t5():
    """Relative-position buckets: abs, log, min of position differences."""
    return _transformers("T5Config", "T5EncoderModel", 24, vocab_size=100, d_model=32, d_kv=8,
                         d_ff=64, num_layers=2, num_heads=4)


def deberta():
    """DeBERTa-v2's disentangled attention: repeat, sign, ceil, log, per-element gather."""
    return _transformers("DebertaV2Config", "DebertaV2Model", 25, max_position_embeddings=64,
                         relative_attention=True, position_buckets=16,
                         pos_att_type=["p2c", "c2p"], **TEXT)


def llama():
    """Rotary embeddings (sin, cos) over a symbolic sequence."""
    return _transformers("LlamaConfig", "LlamaModel", 26, num_key_value_heads=4,
                         max_position_embeddings=64, use_cache=False, **TEXT)


def gpt2_with_cache():
    """GPT-2 as configured by default (use_cache=True): the import turns the cache off."""
    return _transformers("GPT2Config", "GPT2Model", 27, vocab_size=100, n_embd=32, n_layer=2,
                         n_head=4, n_positions=32, bos_token_id=0, eos_token_id=0)


def bert():
    return _transformers("BertConfig", "BertModel", 28, max_position_embeddings=40, **TEXT)


def roberta():
    """Token types through a per-element gather of a buffer (ONNX: GatherElements)."""
    return _transformers("RobertaConfig", "RobertaModel", 29, max_position_embeddings=40, **TEXT)


def swin_v2():
    """Cosine attention (vector norms), a continuous position-bias MLP on a constant table and
    the qkv bias with its key third zeroed (zero + slice_scatter): parameters alone, folded."""
    from torchvision.models.swin_transformer import (PatchMergingV2, SwinTransformer,
                                                     SwinTransformerBlockV2)
    _seeded(30)
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                           window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10,
                           block=SwinTransformerBlockV2, downsample_layer=PatchMergingV2).eval()


def beit():
    """The relative-position bias table resized (bilinear) from parameters alone: folded."""
    return _transformers("BeitConfig", "BeitModel", 31, image_size=32, patch_size=8,
                         use_relative_position_bias=True, **TEXT)


def convnext_v2():
    """Global response norm: a vector norm over H and W."""
    return _transformers("ConvNextV2Config", "ConvNextV2Model", 32, hidden_sizes=[16, 32, 32, 32],
                         depths=[1, 1, 1, 1], image_size=32)


def maxvit():
    """einsum attention."""
    from torchvision.models.maxvit import MaxVit
    _seeded(33)
    return MaxVit(input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[16, 32],
                  block_layers=[1, 1], head_dim=8, stochastic_depth_prob=0.0,
                  num_classes=10).eval()


def mpnet():
    """Relative positions and the mask: two terms added to the scores."""
    return _transformers("MPNetConfig", "MPNetModel", 42, **TEXT)


def bloom():
    """q, k, v interleaved per head, ALiBi added in a baddbmm, the mask on a 4-d view."""
    return _transformers("BloomConfig", "BloomModel", 43, vocab_size=100, hidden_size=32,
                         n_layer=2, n_head=4, use_cache=False)


class EmptyPast(nn.Module):
    """Keys concatenated after an empty past, as a key/value cache before the first step: a
    legacy [0] tensor (OPT's, BLOOM's, GPT-NeoX's caches) and a slice of no columns."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)
        self.register_buffer("past", torch.zeros(0))

    def forward(self, x):                                              # [b, s, 6]
        k = self.proj(x)
        keys = torch.cat([self.past.clone(), k], dim=1)
        return torch.cat([x[:, :0], keys, k[:, :0]], dim=-2) + x


def empty_past():
    _seeded(44)
    return EmptyPast().eval()


class Aliases(nn.Module):
    """ATen's alias spellings, which torch.export keeps as they are (ConvBERT's torch.multiply)."""

    def forward(self, x, y):
        a = torch.multiply(x, y) + torch.subtract(x, y, alpha=2) + torch.divide(x, y.abs() + 1)
        a = a + torch.true_divide(x, 4.0) + torch.negative(y) + torch.absolute(x)
        b = torch.greater(x, y).float() + torch.greater_equal(x, 0.5).float() \
            + torch.less(x, y).float() + torch.less_equal(y, 0.0).float() \
            + torch.not_equal(x, y).float()
        return torch.clip(a, -2.0, 3.0) + b


def aliases():
    return Aliases().eval()


class AddcmulAffine(nn.Module):
    """timm's ResMLP Affine (torch.addcmul(beta, alpha, x)) and addcdiv with a value."""

    def __init__(self):
        super().__init__()
        self.alpha, self.beta = nn.Parameter(torch.randn(5)), nn.Parameter(torch.randn(5))

    def forward(self, x, y):                                           # [b, 5] each
        a = torch.addcmul(self.beta, self.alpha, x)
        return torch.addcdiv(a, x, y * y + 1.0, value=-0.5)


def addcmul_affine():
    _seeded(46)
    return AddcmulAffine().eval()


class SequenceConvs(nn.Module):
    """Convs over a sequence whose length is a dim, channels first (SqueezeBERT's): pointwise,
    grouped and not, with and without a bias."""

    def __init__(self):
        super().__init__()
        self.grouped = nn.Conv1d(16, 24, 1, groups=4)
        self.dense = nn.Conv1d(24, 8, 1, bias=False)

    def forward(self, x):                                              # [b, s, 16]
        y = torch.relu(self.grouped(x.transpose(1, 2)))
        return self.dense(y).transpose(1, 2)


def sequence_convs():
    _seeded(45)
    return SequenceConvs().eval()


class DepthwiseSequenceConvs(nn.Module):
    """ConvBERT's SeparableConv1D over a sequence whose length is a dim: a depthwise conv of
    window 9 (padding 4, no bias), a pointwise one, then a dilated depthwise one with a bias."""

    def __init__(self):
        super().__init__()
        self.depthwise = nn.Conv1d(16, 16, 9, groups=16, padding=4, bias=False)
        self.pointwise = nn.Conv1d(16, 8, 1, bias=False)
        self.dilated = nn.Conv1d(8, 8, 3, groups=8, padding=2, dilation=2)

    def forward(self, x):                                              # [b, s, 16]
        y = self.pointwise(self.depthwise(x.transpose(1, 2)))
        return self.dilated(y).transpose(1, 2)


def depthwise_sequence_convs():
    _seeded(46)
    return DepthwiseSequenceConvs().eval()


class WindowSequenceConvs(nn.Module):
    """Wider windows over a sequence whose length is a dim, ungrouped and grouped (dilated)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(8, 8, 3, padding=1)
        self.grouped = nn.Conv1d(8, 12, 3, groups=4, padding=2, dilation=2, bias=False)

    def forward(self, x):                                              # [b, 8, s]
        return self.grouped(torch.relu(self.conv(x)))


def window_sequence_convs():
    _seeded(47)
    return WindowSequenceConvs().eval()


class StridedSequenceConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(8, 8, 3, stride=2, padding=1)

    def forward(self, x):                                              # [b, 8, s]
        return self.conv(x)


def strided_sequence_conv():
    return StridedSequenceConv().eval()


class StridedConvStack(nn.Module):
    """wav2vec2's feature encoder in small: strided conv1d layers over raw audio [b, L] with L
    a*frames + b, a stride each that divides the length's dim term (5, 2, 2, then a depthwise
    one padded and a pointwise one, both of stride 2: 80 in all)."""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(1, 8, 10, stride=5, bias=False),
                                    nn.Conv1d(8, 8, 3, stride=2), nn.Conv1d(8, 6, 2, stride=2),
                                    nn.Conv1d(6, 6, 3, stride=2, padding=1, groups=6),
                                    nn.Conv1d(6, 4, 1, stride=2)])

    def forward(self, x):                                              # [b, 80*frames + 40]
        y = x[:, None]
        for conv in self.convs:
            y = F.gelu(conv(y))
        return y                                                       # [b, 4, frames + 1]


def strided_conv_stack():
    _seeded(48)
    return StridedConvStack().eval()


class SequenceUnfold(nn.Module):
    """ConvBERT's conv-kernel attention windows: nn.Unfold, kernel [5, 1], padding [2, 0], over
    [b, c, s, 1] with s a dim."""

    def __init__(self):
        super().__init__()
        self.unfold = nn.Unfold(kernel_size=[5, 1], padding=[2, 0])

    def forward(self, x):                                              # [b, s, 6]
        return self.unfold(x.transpose(1, 2).unsqueeze(-1)).transpose(1, 2)  # [b, s, 6 * 5]


def sequence_unfold():
    return SequenceUnfold().eval()


class ImageUnfold(nn.Module):
    """F.unfold over a static image with every option: a 3x2 kernel, dilation, padding, stride."""

    def forward(self, x):                                              # [b, 3, 7, 7]
        return F.unfold(x, (3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1))


def image_unfold():
    return ImageUnfold().eval()


def convbert():
    """ConvBERT: SeparableConv1D (depthwise, window 9) over the sequence and unfold."""
    return _transformers("ConvBertConfig", "ConvBertModel", 48, embedding_size=32,
                         max_position_embeddings=40, **TEXT)


class _MhaBlock(nn.Module):
    """nn.MultiheadAttention called the default way (need_weights=True, weights discarded)."""

    def __init__(self, batch_first: bool):
        super().__init__()
        self.norm = nn.LayerNorm(32)
        self.attn = nn.MultiheadAttention(32, 4, batch_first=batch_first)

    def forward(self, x):
        y = self.norm(x)
        out, _ = self.attn(y, y, y)
        return x + out


def mha_block():
    """Heads folded into the batch: [b*h, s, d] matmuls, the in-projection sliced three ways."""
    _seeded(40)
    return _MhaBlock(batch_first=True).eval()


def mha_seq_first():
    _seeded(41)
    return _MhaBlock(batch_first=False).eval()


class _IntegerDivision(nn.Module):
    """Python's // and %, C's fmod and torch.div's rounding modes, over int64 ids (hash buckets,
    positions) and floats, with negative operands, a tensor divisor that is 1 or more, and
    scalar divisors of both signs."""

    def forward(self, ids, x):
        a = ids % 7 + torch.remainder(ids, -5) + ids // 3 + torch.div(ids, -4, rounding_mode="trunc")
        b = torch.fmod(ids, 6) + torch.div(ids, ids.abs() + 2, rounding_mode="floor") \
            + torch.fmod(ids, ids.abs() % 4 + 1)
        y = torch.remainder(x, 0.75) + torch.fmod(x, -1.5) + torch.div(x, 0.3, rounding_mode="floor") \
            + torch.div(x, -0.7, rounding_mode="trunc") + x // 2 + torch.remainder(x, x.abs() + 0.5)
        return a + b, y


def integer_division():
    return _IntegerDivision().eval()


class _AdvancedIndexing(nn.Module):
    """x[i, j] with integer index tensors on several axes: adjacent ones (rows picked per
    batch), axes apart ([:, i, :, j]: the picked axes move first), broadcast index shapes, and
    negative indices counting from the end."""

    def forward(self, x, ids):  # x [batch, 6, 5, 4], ids [batch, 3] in -5..4
        b = x.shape[0]
        rows = torch.arange(b).unsqueeze(1)                     # [b, 1]
        adjacent = x[rows, ids.clamp(-6, 5)]                    # [b, 3, 5, 4]
        apart = x[:, ids[0].clamp(-6, 5), :, ids[0] % 4]        # [3, b, 5]
        pair = x[0][ids % 6, ids.flip(-1)]                      # [b, 3, 4]
        return adjacent.sum(-1), apart, pair


def advanced_indexing():
    return _AdvancedIndexing().eval()


class _Activations(nn.Module):
    """Activations, rounding, statistics and masks the importers build from our ops
    (importers/activations.py, torch_math.py), each applied to the same [batch, 8, 6, 4] input."""

    def __init__(self):
        super().__init__()
        self.prelu = nn.PReLU(8, init=0.2)

    def forward(self, x):
        y = F.leaky_relu(x, 0.1) + F.elu(x, 0.7) + F.selu(x) + F.celu(x, 1.3) + F.softplus(x, 2.0, 3.0) \
            + F.mish(x) + F.logsigmoid(x) + F.hardshrink(x, 0.4) + F.softshrink(x, 0.3) + self.prelu(x)
        y = y + torch.floor(x * 3) + torch.round(x * 3) + torch.trunc(x * 3) + torch.frac(x * 3) \
            + torch.expm1(x) + torch.log1p(x.abs()) + torch.atan(x) + torch.exp2(x) + torch.log2(x.abs() + 1) \
            + x.square() + torch.lerp(x, x * 2, 0.3) + torch.hypot(x, x + 1) + x.clamp(min=x * 0.5) \
            + torch.nan_to_num(x.log()) + torch.tril(x) + torch.triu(x, 1) + x.abs() ** 0.75 + x ** 4 \
            + F.instance_norm(x, weight=torch.linspace(0.5, 2, 8), bias=torch.linspace(-1, 1, 8))
        stats = x.var(-1) + x.std((2, 3), keepdim=True).squeeze(-1) + torch.logsumexp(x, -1) \
            + (x > 0).any(-1).float() + (x > -2).all(-1).float() + torch.isinf(x.log()).float().sum(-1) \
            + F.cosine_similarity(x, x * 0.5 + 1, dim=-1) + F.pairwise_distance(x, x.flip(-1))
        one_hot = F.one_hot((x.abs() * 2).long().clamp(max=3), 4).float().sum(-1)
        return F.log_softmax(y, -1), F.glu(y, 1), stats, one_hot


def activations():
    _seeded(43)
    return _Activations().eval()


class _Rearrangements(nn.Module):
    """Pixel (un)shuffle, channel shuffle, rot90 (k = 1, 2, 3), Tensor.unfold, roll over the
    flattened tensor, the edge padding modes (reflect, replicate, circular, and the modules),
    1-d pools and 1-d interpolation."""

    def __init__(self):
        super().__init__()
        self.reflect = nn.ReflectionPad2d((1, 2, 0, 1))
        self.replicate = nn.ReplicationPad1d(2)

    def forward(self, x):  # [batch, 8, 6, 4]
        up = F.pixel_shuffle(x, 2)                                          # [b, 2, 12, 8]
        down = F.pixel_unshuffle(up, 2)                                     # back
        turned = torch.rot90(x, 1, (2, 3)) + torch.rot90(x, 3, (2, 3))      # [b, 8, 4, 6]
        half = torch.rot90(x, 2, (1, 2))                                    # [b, 8, 6, 4]
        windows = x.unfold(2, 3, 2)                                         # [b, 8, 2, 4, 3]
        padded = F.pad(x, (1, 1, 2, 2), mode="reflect") + F.pad(x, (1, 1, 2, 2), mode="circular") \
            + F.pad(x, (1, 1, 2, 2), mode="replicate")                      # [b, 8, 10, 6]
        edges = self.reflect(x).sum(1) + self.replicate(x.flatten(2))[:, :7, :7]  # [b, 7, 7]
        shuffled = F.channel_shuffle(x, 2)
        seq = x.flatten(2)                                                  # [b, 8, 24]
        pooled = F.max_pool1d(seq, 3, 2, padding=1) + F.avg_pool1d(seq, 4, 2, padding=2, ceil_mode=True,
                                                                   count_include_pad=False)[..., :12]
        stretched = F.interpolate(seq, size=31, mode="linear") + F.interpolate(seq, size=31)
        return (down + shuffled, turned, half, windows, padded, edges,
                torch.roll(x[0, :2, :2, :2], 3), pooled, stretched)  # roll: over the flattened [2, 2, 2]


def rearrangements():
    return _Rearrangements().eval()


class _NormsAndCounts(nn.Module):
    """LayerNorm without a bias (MPT's), a layer norm whose scale the model computes (Gemma's
    1 + w), and integer sums (Deformable DETR counts a mask's valid positions)."""

    def __init__(self):
        super().__init__()
        self.plain = nn.LayerNorm(16, bias=False)
        self.scale = nn.Parameter(torch.randn(16) * 0.1)

    def forward(self, x, mask):  # x [batch, 5, 16], mask [batch, 5] int64
        y = self.plain(x) + F.layer_norm(x, (16,), 1.0 + self.scale, None, 1e-6)
        valid = mask.sum(-1, keepdim=True)  # int64
        return y * valid.unsqueeze(-1).float(), valid * 3


def norms_and_counts():
    _seeded(44)
    return _NormsAndCounts().eval()


class _GridSamples(nn.Module):
    """F.grid_sample: bilinear with either corner rule, border padding, nearest; points inside
    and outside the image (Deformable DETR samples its value maps this way)."""

    def forward(self, x, grid):  # x [batch, 4, 6, 5], grid [batch, 3, 7, 2] in about [-1.3, 1.3]
        return (F.grid_sample(x, grid, align_corners=False)
                + F.grid_sample(x, grid, align_corners=True)
                + F.grid_sample(x, grid, padding_mode="border", align_corners=False)
                + F.grid_sample(x, grid, mode="nearest", align_corners=False))


def grid_samples():
    return _GridSamples().eval()


class _DepthwiseOwnResidual(nn.Module):
    """y + bn(depthwise(y)): the residual is the conv's own input (timm's EfficientViT-MSRA and
    DaViT), which must not share the conv output's bytes."""

    def __init__(self):
        super().__init__()
        self.pw = nn.Conv2d(16, 16, 1)
        self.dw = nn.Conv2d(16, 16, 3, 1, 1, groups=16, bias=False)
        self.bn = nn.BatchNorm2d(16)

    def forward(self, x):
        y = self.pw(x)
        return y + self.bn(self.dw(y))


def depthwise_own_residual():
    _seeded(45)
    m = _DepthwiseOwnResidual().eval()
    with torch.no_grad():
        m.bn.running_mean.normal_()
        m.bn.running_var.uniform_(0.5, 2)
        m.bn.weight.normal_()
        m.bn.bias.normal_()
    return m


class _SdpaRanks(nn.Module):
    """scaled_dot_product_attention over other ranks than 4: 5-d q, k, v (NesT's [batch, heads,
    blocks, seq, head_dim]) without a mask and with a per-block mask, and 3-d ones (no heads
    axis) with a causal mask."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.proj = nn.Linear(16, 16)
        self.register_buffer("block_mask", torch.randn(3, 6, 6))  # [blocks, seq, seq]

    def forward(self, x):  # [batch, 3 blocks, 6, 16]
        b, t, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, t, n, 3, 2, 8).permute(3, 0, 4, 1, 2, 5).unbind(0)
        y = F.scaled_dot_product_attention(q, k, v) \
            + F.scaled_dot_product_attention(q, k, v, attn_mask=self.block_mask)
        z = x.reshape(b * t, n, c)
        z = F.scaled_dot_product_attention(z, z, z, is_causal=True).reshape(b, t, n, c)
        return self.proj(y.permute(0, 2, 3, 1, 4).reshape(b, t, n, c)) + z


def sdpa_ranks():
    _seeded(42)
    return _SdpaRanks().eval()


def wav2vec2():
    """conv1d feature extractor with group norm, a weight-normed positional conv1d."""
    return _transformers("Wav2Vec2Config", "Wav2Vec2Model", 34, vocab_size=10, hidden_size=32,
                         num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                         conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                         num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=4,
                         feat_extract_norm="group")


def whisper_encoder():
    """Whisper's encoder: conv1d stem over mel frames."""
    import transformers
    _seeded(35)
    config = transformers.WhisperConfig(
        vocab_size=100, num_mel_bins=8, d_model=32, encoder_layers=2, encoder_attention_heads=4,
        decoder_layers=1, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_source_positions=16, pad_token_id=0, bos_token_id=0, eos_token_id=0,
        decoder_start_token_id=0)
    return transformers.WhisperModel(config).get_encoder().eval()


def r3d():
    """torchvision's VideoResNet (R3D): conv3d and adaptive_avg_pool3d."""
    from torchvision.models.video.resnet import BasicBlock, BasicStem, Conv3DSimple, VideoResNet
    _seeded(36)
    return VideoResNet(BasicBlock, [Conv3DSimple] * 4, [1, 1, 1, 1], BasicStem,
                       num_classes=5).eval()


class Recurrent(nn.Module):
    """Two bidirectional LSTM layers, batch first, and a GRU over their output, seq first."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(32, 8)

    def forward(self, x):
        y, _ = self.lstm(x)
        z, h = self.gru(y.transpose(0, 1))
        return z, h


def recurrent():
    _seeded(37)
    return Recurrent().eval()


def retinanet():
    """torchvision's RetinaNet on a small ResNet + FPN: imported up to its head."""
    from torchvision.models.detection.backbone_utils import BackboneWithFPN
    from torchvision.models.detection.retinanet import RetinaNet
    from torchvision.models.resnet import BasicBlock, ResNet
    from torchvision.ops.feature_pyramid_network import LastLevelP6P7
    _seeded(38)
    backbone = BackboneWithFPN(ResNet(BasicBlock, [1, 1, 1, 1]),
                               {"layer2": "0", "layer3": "1", "layer4": "2"}, [128, 256, 512], 32,
                               LastLevelP6P7(32, 32))
    return RetinaNet(backbone, num_classes=3, min_size=64, max_size=64).eval()


# -- where imports stop -----------------------------------------------------------------------

class DataDependent(nn.Module):
    """Keeps as many columns as there are positive values: a shape torch.export cannot follow."""

    def forward(self, x):
        kept = int((x > 0).sum())
        return x[:, :kept] * 2


def data_dependent():
    return DataDependent()


class FoldInside(nn.Module):
    """An op without a translation inside a torch module (nn.Fold's col2im of an unbatched
    [C*kh*kw, L] input)."""

    def __init__(self):
        super().__init__()
        self.fold = nn.Fold((3, 3), 2)

    def forward(self, x):
        return self.fold(x)  # the line the report names


def fold_inside():
    return FoldInside()


class NotEverySize(nn.Module):
    """A model that takes every sequence length but 2 (MobileBERT's trigram embedding)."""

    def forward(self, x):
        return x * 2 if x.shape[1] != 2 else x


def not_every_size():
    return NotEverySize()


class _SliceAssign(nn.Module):
    """Slice assignment into a computed tensor (MViTv2's relative positions:
    `attn[:, :, 1:, 1:] = attn[:, :, 1:, 1:] + rel`), exported as aten.copy into a slice and
    slice_scatter; the second from a narrower source, broadcast along the last axis."""

    def forward(self, x):  # [batch, 8, 6, 4]
        a = x * 2
        a[:, :, 1:, 1:] = a[:, :, 1:, 1:] + x[:, :, :5, :3]
        b = x + 1
        b[:, 2:5] = x[:, :3, :, :1]
        return a, b


def slice_assign():
    return _SliceAssign().eval()


class _OverlappingFolds(nn.Module):
    """F.fold of windows that overlap or skip (VOLO's outlook attention folds 3x3 windows at
    stride 2 back with padding 1): taps summed where windows meet."""

    def forward(self, x):  # [batch, 8, 6, 4]
        cols = F.unfold(x, 3, padding=1, stride=2)  # [batch, 72, 3 * 2]
        volo = F.fold(cols * 0.5, (6, 4), 3, padding=1, stride=2)
        dense = F.fold(F.unfold(x, 2), (6, 4), 2)  # stride 1: each inner pixel 4 times
        dilated = F.fold(F.unfold(x, 2, dilation=2, stride=(1, 2)), (6, 4), 2, dilation=2,
                         stride=(1, 2))
        return volo, dense, dilated


def overlapping_folds():
    return _OverlappingFolds().eval()


class _ProductFills(nn.Module):
    """Tensors filled at a size that is a product of dims: timm's Sequencer runs a bidirectional
    LSTM over each row (batch*rows sequences), whose zero initial states are such fills, and
    full / ones_like over a flattened batch."""

    def __init__(self):
        super().__init__()
        _seeded(41)
        self.rnn = nn.LSTM(8, 5, batch_first=True, bidirectional=True)

    def forward(self, x):  # [batch, 8, 6, 4]
        rows = x.permute(0, 2, 3, 1).reshape(-1, 4, 8)  # [batch*6, 4, 8]
        seq, _ = self.rnn(rows)
        flat = x.reshape(-1, 4)  # [batch*48, 4]
        return seq, flat + torch.full((flat.shape[0], 1), 0.5), torch.ones_like(flat) * 2


def product_fills():
    return _ProductFills().eval()


class _Ordering(nn.Module):
    """Sorting, selection, products and running extremes along short axes (a router's top-k
    over its experts, a median filter's window): float rows, and integer ones full of ties."""

    def forward(self, x):  # [batch, 6, 10]
        ints = (x * 1.5).round().to(torch.int64)  # ties everywhere
        sorted_rows, rows_order = torch.sort(x, dim=-1)
        sorted_cols = torch.sort(x, dim=1, descending=True)[0]
        top, top_at = torch.topk(F.softmax(x, -1), 3, dim=-1)
        low, low_at = torch.topk(x, 2, dim=1, largest=False)
        kth, kth_at = torch.kthvalue(x, 4, dim=-1)
        mid, mid_at = torch.median(x, dim=1, keepdim=True)
        stable, stable_at = torch.sort(ints, dim=-1, stable=True, descending=True)
        running, running_at = torch.cummax(x, dim=-1)
        falling, falling_at = torch.cummin(ints, dim=1)
        return (sorted_rows, rows_order, sorted_cols, top, top_at, low, low_at, kth, kth_at,
                mid, mid_at, torch.argsort(x, dim=1, descending=True), stable, stable_at,
                torch.prod(x, dim=-1), torch.prod(ints % 3 + 1, dim=1, keepdim=True),
                torch.cumprod(x * 0.5 + 1, dim=1), running, running_at, falling, falling_at,
                torch.median(x[0]), torch.max(x, dim=1)[1], x.min(-1, keepdim=True)[1])


def ordering():
    return _Ordering().eval()


class _Scatters(nn.Module):
    """Writes by position: masks set and added to, rows put by an index (repeated: the last
    one wins), scatter and its reductions, index_add / index_copy / index_fill."""

    def forward(self, x, ids):  # x [batch, 6, 5], ids [batch, 3] in [0, 5)
        masked = x.clone()
        masked[masked < 0] = 0.25
        shifted = x.index_put((x > 1,), torch.tensor(1.0), accumulate=True)
        rows = torch.tensor([4, 0, 4, -1])
        put = x.clone()
        put[:, rows] = x[:, :4] * 2
        added = x.clone()
        added[:, rows] += x[:, 1:5]
        cols = ids[:, None, :].expand(-1, 6, -1)
        src = x[:, :, :3] * 3
        return (masked, shifted, put, added,
                x.scatter(2, cols, src), x.scatter(2, cols, -2.0), x.scatter_add(2, cols, src),
                x.scatter_reduce(2, cols, src, "amax"), x.scatter_reduce(2, cols, src, "amin"),
                x.scatter_reduce(2, cols, src, "prod"),
                x.scatter_reduce(2, cols, src, "mean", include_self=False),
                x.scatter_reduce(2, cols, src, "sum", include_self=False),
                x.index_add(1, rows % 6, x[:, :4], alpha=0.5),
                x.index_copy(2, torch.tensor([3, 1]), x[:, :, :2]),
                x.index_fill(1, torch.tensor([2, 5]), 7.0))


def scatters():
    return _Scatters().eval()


class _Bags(nn.Module):
    """nn.EmbeddingBag over bags of one size: sum, mean (with a padding index) and max, and
    per-sample weights."""

    def __init__(self):
        super().__init__()
        _seeded(43)
        self.total = nn.EmbeddingBag(20, 6, mode="sum")
        self.mean = nn.EmbeddingBag(20, 6, mode="mean", padding_idx=3)
        self.most = nn.EmbeddingBag(20, 6, mode="max")

    def forward(self, ids, weights):  # ids [batch, 5] in [0, 20), weights [batch, 5]
        return (self.total(ids), self.mean(ids), self.most(ids),
                self.total(ids, per_sample_weights=weights))


def bags():
    return _Bags().eval()


class _RunTimeCounts(nn.Module):
    """Sizes only the run knows, from the fourth transformers sweep: sums over the batch (the
    time-series models' mean scaler) and over batch*seq tokens (JetMoE's expert sizes), an
    arange over batch*seq (MoE's inverse permutation), logical ops of int64 masks (LongT5), a
    slice from -seq (XLM), torch.empty filled by copies (DeepSeek-V3), histc and the inverse of
    a sort over batch*seq tokens (routers), maxes over batch*seq and over seq (GPT-OSS)."""

    def forward(self, x, mask):  # x [batch, seq, 4], mask [batch, seq] int64
        scale = x.sum(0) / torch.clamp((x != 0).float().sum(0), min=1)
        sizes = (x > 0).long().flatten(0, 1).sum(0)
        flat = x[..., 0].flatten() + torch.arange(x.size(0) * x.size(1))
        both = torch.logical_and(mask.unsqueeze(-1), mask.unsqueeze(-2)).float()
        either = torch.logical_or(mask, torch.logical_not(mask)).float()
        tail = x[:, -x.size(1):] * 2
        k = x.new_empty(*x.shape[:-1], 6)
        k[..., :4].copy_(x)
        k[..., 4:].copy_(x[..., :2])
        bins = torch.histc(x[0, 0] * 2, bins=5, min=-2, max=2)
        perm = torch.argsort(x[..., 1].flatten())  # MoE's token order, and its inverse
        inverse = torch.empty_like(perm)
        inverse[perm] = torch.arange(perm.size(0))
        return (scale, sizes, flat, both, either, tail, k, bins,
                torch.histc(x[0, 0], bins=3), perm, inverse, x.amax(dim=(0, 1)),
                x - x.max(dim=1, keepdim=True).values)


def run_time_counts():
    return _RunTimeCounts().eval()


class _GroupedExperts(nn.Module):
    """transformers' grouped matmul of a mixture of experts (its default expert path): rows
    sorted by expert, offs the cumulative row counts (an expert with no rows included)."""

    def __init__(self):
        super().__init__()
        import transformers.integrations.moe  # noqa: F401  registers torch.ops.transformers
        _seeded(44)
        self.weight = nn.Parameter(torch.randn(4, 16, 8) * 0.25)
        self.register_buffer("offs", torch.tensor([2, 2, 7, 9], dtype=torch.int32))

    def forward(self, x):  # [9, 16]
        return torch.ops.transformers.grouped_mm_fallback(x, self.weight, self.offs)


def grouped_experts():
    return _GroupedExperts().eval()
