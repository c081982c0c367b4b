"""Small PyTorch models in the shapes of the model families the importers must take: a residual
CNN, a depthwise + squeeze-excitation block, a BERT-style encoder layer, a GPT-2-style decoder
block (Conv1D's [in, out] weights, a causal mask from a buffer) and a ViT (patches, class token,
position table, encoder layers). Each factory takes keyword arguments only, as
`ait-build import torch tests.importers.zoo:NAME --args JSON` calls it."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResidualCNN(nn.Module):
    def __init__(self, width=8, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        self.layers = nn.Sequential(BasicBlock(width, width, 1), BasicBlock(width, width, 1),
                                    BasicBlock(width, 2 * width, 2),
                                    BasicBlock(2 * width, 2 * width, 1))
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class SqueezeExcite(nn.Module):
    def __init__(self, channels, squeezed):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.fc2 = nn.Conv2d(squeezed, channels, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


class InvertedResidual(nn.Module):
    """MobileNetV2/V3 and EfficientNet's block: expand, depthwise, SE, project."""

    def __init__(self, channels=8, expand=4):
        super().__init__()
        hidden = channels * expand
        self.expand = nn.Sequential(nn.Conv2d(channels, hidden, 1, bias=False),
                                    nn.BatchNorm2d(hidden), nn.ReLU6())
        self.depthwise = nn.Sequential(nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden,
                                                 bias=False), nn.BatchNorm2d(hidden), nn.Hardswish())
        self.se = SqueezeExcite(hidden, hidden // 4)
        self.project = nn.Sequential(nn.Conv2d(hidden, channels, 1, bias=False),
                                     nn.BatchNorm2d(channels))

    def forward(self, x):
        return x + self.project(self.se(self.depthwise(self.expand(x))))


class DepthwiseSE(nn.Module):
    def __init__(self, channels=8):
        super().__init__()
        self.stem = nn.Conv2d(3, channels, 3, 2, 1)
        self.blocks = nn.Sequential(InvertedResidual(channels), InvertedResidual(channels))
        self.head = nn.Linear(channels, 5)

    def forward(self, x):
        x = self.blocks(F.silu(self.stem(x)))
        return self.head(x.mean(dim=(2, 3)))


class BertLayer(nn.Module):
    def __init__(self, hidden=32, heads=4, ffn=64):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.ffn_in = nn.Linear(hidden, ffn)
        self.ffn_out = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, -1).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
        ctx = (scores.softmax(-1) @ v).permute(0, 2, 1, 3).flatten(2)
        x = self.ln1(x + self.out(ctx))
        return self.ln2(x + self.ffn_out(F.gelu(self.ffn_in(x))))


class BertEncoder(nn.Module):
    def __init__(self, vocab=50, hidden=32, layers=2, positions=16):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(positions, hidden)
        self.register_buffer("position_ids", torch.arange(positions)[None], persistent=False)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden) for _ in range(layers))

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        x = self.ln(self.word(input_ids) + self.position(self.position_ids[:, :seq]))
        mask = attention_mask.to(x.dtype)
        for layer in self.layers:
            x = layer(x, mask)
        return x


class Conv1D(nn.Module):
    """transformers' Conv1D: a linear layer whose weight is stored [in, out]."""

    def __init__(self, out_features, in_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.05)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.05)

    def forward(self, x):
        shape = x.shape[:-1] + (self.weight.shape[1],)
        return torch.addmm(self.bias, x.view(-1, x.shape[-1]), self.weight).view(shape)


class GPT2Block(nn.Module):
    def __init__(self, hidden=32, heads=4, positions=16):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = Conv1D(3 * hidden, hidden)
        self.c_proj = Conv1D(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = Conv1D(4 * hidden, hidden)
        self.mlp_proj = Conv1D(hidden, 4 * hidden)
        self.register_buffer("bias", torch.tril(torch.ones(positions, positions, dtype=torch.bool))
                             .view(1, 1, positions, positions), persistent=False)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.shape[-1])
        causal = self.bias[:, :, :s, :s]
        scores = torch.where(causal, scores, torch.tensor(torch.finfo(scores.dtype).min))
        ctx = torch.matmul(scores.softmax(-1), v).transpose(1, 2).reshape(b, s, h)
        x = x + self.c_proj(ctx)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, vocab=50, hidden=32, layers=2, positions=16):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(positions, hidden)
        self.h = nn.ModuleList(GPT2Block(hidden, positions=positions) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1])
        x = self.wte(input_ids) + self.wpe(positions)[None]
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class ViTLayer(nn.Module):
    def __init__(self, hidden=32, heads=4):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.GELU(),
                                 nn.Linear(2 * hidden, hidden))

    def forward(self, x):
        y = self.ln_1(x)
        y, _ = self.self_attention(y, y, y, need_weights=False)
        x = x + y
        return x + self.mlp(self.ln_2(x))


class ViT(nn.Module):
    def __init__(self, image=16, patch=4, hidden=32, layers=2, classes=10):
        super().__init__()
        self.conv_proj = nn.Conv2d(3, hidden, patch, patch)
        self.class_token = nn.Parameter(torch.randn(1, 1, hidden) * 0.02)
        tokens = (image // patch) ** 2 + 1
        self.pos_embedding = nn.Parameter(torch.randn(1, tokens, hidden) * 0.02)
        self.layers = nn.Sequential(*(ViTLayer(hidden) for _ in range(layers)))
        self.ln = nn.LayerNorm(hidden, eps=1e-6)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.ln(self.layers(x + self.pos_embedding))
        return self.head(x[:, 0])


def _randomized(model: nn.Module, seed: int = 0) -> nn.Module:
    """Batch-norm statistics away from (0, 1), so folding them is tested."""
    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
    return model.eval()


def residual_cnn(**kw):
    torch.manual_seed(0)
    return _randomized(ResidualCNN(**kw))


def depthwise_se(**kw):
    torch.manual_seed(1)
    return _randomized(DepthwiseSE(**kw))


def bert_encoder(**kw):
    torch.manual_seed(2)
    return BertEncoder(**kw).eval()


def gpt2(**kw):
    torch.manual_seed(3)
    return GPT2(**kw).eval()


def vit(**kw):
    torch.manual_seed(4)
    return ViT(**kw).eval()


def resnet18(**kw):
    """torchvision's resnet18 with seeded random weights (nothing is downloaded)."""
    import torchvision
    torch.manual_seed(5)
    return _randomized(torchvision.models.resnet18(weights=None, **kw))


class Unsupported(nn.Module):
    """Four ATen operations without a translation, for the importers' report."""

    def forward(self, x):
        y = torch.lgamma(x)
        return torch.digamma(y) + torch.fft.fft(x).real  # fft_fft, view_as_real


def unsupported():
    return Unsupported()


def torchvision_model(name: str, seed: int = 6, **kw):
    """A torchvision classifier by name with seeded random weights (nothing is downloaded)."""
    import torchvision
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)(weights=None, **kw)
    with torch.no_grad():  # zero-initialized heads (ViT's) would make every output 0
        for p in model.parameters():
            if p.ndim > 1 and not p.any():
                p.normal_(0.0, 0.02)
    return _randomized(model)


def transformers_model(kind: str, seed: int = 7):
    """A small transformers model (random weights, 2 layers): 'distilbert' or 'gpt2'."""
    import transformers
    torch.manual_seed(seed)
    if kind == "distilbert":
        config = transformers.DistilBertConfig(vocab_size=100, dim=32, n_layers=2, n_heads=4,
                                               hidden_dim=64, max_position_embeddings=32)
        return transformers.DistilBertModel(config).eval()
    config = transformers.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4,
                                     n_positions=32, use_cache=False, bos_token_id=0,
                                     eos_token_id=0)
    return transformers.GPT2Model(config).eval()


def small_swin(seed: int | None = 8):
    """torchvision's SwinTransformer class at a small size: two stages of a plain and a shifted
    window block (window 4 over 8x8 patches, so the shift and its mask are real), patch merging.
    With seed None its weights come from whatever the random generator holds, as torchvision's
    own factories (swin_s) draw them."""
    from torchvision.models.swin_transformer import SwinTransformer
    if seed is not None:
        torch.manual_seed(seed)
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                           window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10).eval()


def small_swin_unseeded():
    return small_swin(seed=None)


def small_swin_v2_unseeded():
    """Swin V2's blocks, weights drawn unseeded: the import folds parameters into constants (the
    continuous position bias MLP over its coordinate table, the clamped logit scale), which a
    rebuilt module has only if it draws the same weights."""
    from functools import partial

    from torchvision.models.swin_transformer import (PatchMergingV2, SwinTransformer,
                                                     SwinTransformerBlockV2)
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                           window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10,
                           block=SwinTransformerBlockV2,
                           downsample_layer=partial(PatchMergingV2)).eval()


def small_convnext(seed: int = 9):
    """torchvision's ConvNeXt class at a small size; layer scale 0.5, not 1e-6, so the blocks'
    branches count in the output next to their residuals."""
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    torch.manual_seed(seed)
    blocks = [CNBlockConfig(16, 32, 2), CNBlockConfig(32, None, 2)]
    return ConvNeXt(blocks, layer_scale=0.5, num_classes=10).eval()


def small_resnext(seed: int = 10):
    """torchvision's ResNet class as ResNeXt (grouped 3x3 convs: 4 groups of 4 channels), one
    bottleneck per stage but three in the second."""
    from torchvision.models.resnet import Bottleneck, ResNet
    torch.manual_seed(seed)
    return _randomized(ResNet(Bottleneck, [1, 3, 1, 1], groups=4, width_per_group=4,
                              num_classes=10))


def distilbert():
    return transformers_model("distilbert")


def hf_gpt2():
    return transformers_model("gpt2")


class Scans(nn.Module):
    """cumsum and diff along a dim of symbolic size: floats, bools counted as int64, an integer
    diff of order 2 with prepend and append, a bool diff (xor)."""

    def forward(self, x, ids):
        return (torch.cumsum(x, dim=1), torch.cumsum(ids != 0, dim=-1),
                torch.diff(ids, n=2, dim=1, prepend=ids[:, :1], append=ids[:, -1:]),
                torch.diff(ids > 2, dim=1))


def scans():
    return Scans()


class _Lookups(nn.Module):
    """A parameter read through one integer index table, and through two at once."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(11)
        self.table = nn.Parameter(torch.randn(6, 4))
        self.register_buffer("index", torch.tensor([5, 0, 2]))
        self.register_buffer("rows", torch.tensor([1, 3, 4, 0]))
        self.register_buffer("cols", torch.tensor([2, 0, 3, 1]))

    def forward(self, x):  # x [batch, 3, 4]
        return x * self.table[self.rows, self.cols] + self.table[self.index]


def lookups():
    return _Lookups().eval()


class _Rotary(nn.Module):
    """LLaMA's rotary angles: integer positions cast to float32 and times `inv_freq.float()`,
    whatever the module's dtype, then `cos.to(x.dtype)` against the activations."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, 8, 2).float() / 8))

    def forward(self, x):  # x [batch, seq, 8]
        pos = torch.arange(x.shape[1], device=x.device)[None, :, None]
        angles = pos.float() * self.inv_freq[None, None, :].float()
        emb = torch.cat([angles, angles], dim=-1)
        h = self.proj(x)
        return h * emb.cos().to(h.dtype) + h * emb.sin().to(h.dtype)


def rotary():
    return _Rotary().eval()


class _AdaptivePools(nn.Module):
    """Adaptive average pools whose windows are of unequal sizes, overlap or repeat inputs
    (VGG's and AlexNet's classifier pools on an image that is not 224 square)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):  # x [batch, 3, 5, 10]
        y = self.conv(x)
        uneven = F.adaptive_avg_pool2d(y, (3, 7)).flatten(1)         # 5 -> 3, 10 -> 7
        grown = F.adaptive_avg_pool2d(y[:, :, :2, :2], 3).flatten(1)  # 2 -> 3: inputs repeat
        halves = F.adaptive_avg_pool2d(y, (5, 5)).flatten(1)          # even: avg_pool2d
        rows = F.adaptive_avg_pool1d(y.flatten(2), 4)                 # 50 -> 4
        frames = F.adaptive_avg_pool3d(y.unsqueeze(2).expand(-1, -1, 3, -1, -1), (2, 1, 3))
        return torch.cat([uneven, grown, halves, rows.flatten(1), frames.flatten(1)], 1)


def adaptive_pools():
    torch.manual_seed(12)
    return _AdaptivePools().eval()


class _Extremes(nn.Module):
    """Max and min reductions as attention modules write them (CBAM: a channel gate from the
    average and the max pool, a spatial gate from the mean and the max over channels)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Conv2d(4, 4, 1)
        self.spatial = nn.Conv2d(2, 1, 3, padding=1)

    def forward(self, x):  # x [batch, 4, 6, 6]
        gate = torch.sigmoid(self.fc(F.adaptive_avg_pool2d(x, 1)) + self.fc(F.adaptive_max_pool2d(x, 1)))
        y = x * gate
        most, _ = torch.max(y, dim=1, keepdim=True)
        both = torch.cat([y.mean(1, keepdim=True), most], 1)
        y = y * torch.sigmoid(self.spatial(both))
        least = torch.amin(y, dim=(2, 3))                     # [batch, 4]
        pooled = F.adaptive_max_pool2d(y, 3).flatten(1)       # 6 -> 3: even windows
        rows, _ = y.flatten(2).min(-1)                        # [batch, 4]
        return torch.cat([least, pooled, rows, y.amax(-1).flatten(1)], 1) * y[0].max()


def extremes():
    torch.manual_seed(13)
    return _Extremes().eval()


class _ScaledProducts(nn.Module):
    """baddbmm and addmm with beta and alpha (BLOOM's attention scores with the ALiBi bias)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(5, 3))
        self.b = nn.Parameter(torch.randn(3))
        self.register_buffer("alibi", torch.arange(4.0).reshape(1, 1, 4))

    def forward(self, x):  # x [batch, 4, 5]
        scores = torch.baddbmm(self.alibi.expand(x.shape[0], 4, 4), x, x.transpose(1, 2),
                               beta=1.0, alpha=0.25)
        rows = torch.addmm(self.b, x.flatten(0, 1), self.w, beta=0.5, alpha=2.0)
        kept = torch.addmm(self.b, x.flatten(0, 1), self.w)
        return scores.flatten(1), (rows + kept).reshape(x.shape[0], -1)


def scaled_products():
    torch.manual_seed(14)
    return _ScaledProducts().eval()


class _Interleaves(nn.Module):
    """repeat_interleave by a number along a dim and of the flattened tensor (GPT-J's rotary
    sin and cos)."""

    def forward(self, x):  # x [batch, 3, 4]
        return (x.repeat_interleave(2, dim=-1).flatten(1), torch.repeat_interleave(x, 3, 1),
                torch.repeat_interleave(x[0], 2))


def interleaves():
    return _Interleaves().eval()


class _Pooled(nn.Module):
    """CLIP's pooled token: the hidden state at each row's argmax of the ids, x[arange(b), idx];
    argmin and argmax of floats along other axes, and of everything."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 6)

    def forward(self, ids):  # ids [batch, 7]
        h = self.embed(ids)
        pooled = h[torch.arange(h.shape[0]), ids.argmax(dim=-1)]
        firsts = (ids == 3).int().argmax(-1)
        return (pooled, h.argmin(1), h.argmax(-1, keepdim=True).flatten(1), firsts,
                h[0].argmax().reshape(1))


def pooled():
    torch.manual_seed(15)
    return _Pooled().eval()


class _MaxIndices(nn.Module):
    """Reads the indices of a max pool, which the import does not make."""

    def forward(self, x):
        values, indices = F.max_pool2d(x, 2, return_indices=True)
        return values + indices.float()


def max_indices():
    return _MaxIndices()
