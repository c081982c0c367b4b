"""Minimal reproducers of the fourth sweep's import failures (README_sweep4.md), one module a
cause, each failing as the models did:

    ait-build import torch bench.results.cpu.import_sweep.sweep4_repro:NAME --input ...

(the --input line of each is in its docstring)."""
import torch


class SortSymbolic(torch.nn.Module):
    """MoE "grouped_mm" routing (integrations/moe.py: `torch.sort(expert_ids)` over the
    batch*seq*top_k routed tokens), JetMoE's router. --input x:batch,seq:int64 --dim seq=2:64:16"""
    def forward(self, x):
        ids, perm = torch.sort(x.flatten())
        return ids, perm


class Histc(torch.nn.Module):
    """Tokens per expert (moe.py: `torch.histc(expert_ids.float(), bins=E, min=0, max=E-1)`).
    --input x:2,8"""
    def forward(self, x):
        return torch.histc(x, bins=4, min=0, max=3)


class GroupedMM(torch.nn.Module):
    """transformers' grouped matmul custom op (moe.py `_grouped_linear` on CPU float32: rows
    offs[i-1]:offs[i] times weight[i]). --input x:8,16"""
    def __init__(self):
        super().__init__()
        import transformers.integrations.moe  # noqa: F401  registers torch.ops.transformers
        self.w = torch.nn.Parameter(torch.randn(4, 16, 8))
        self.register_buffer("offs", torch.tensor([2, 4, 6, 8], dtype=torch.int32))

    def forward(self, x):
        return torch.ops.transformers.grouped_mm_fallback(x, self.w, self.offs)


class EmptyLikeSymbolic(torch.nn.Module):
    """moe.py's inverse permutation starts from `inv = torch.empty_like(perm)` over the
    batch*seq*top_k routed tokens (with a static size the import folds it away).
    --input x:n --dim n=2:64:16"""
    def forward(self, x):
        perm = x.long()
        inv = torch.empty_like(perm)
        inv[perm] = perm
        return inv


class ArangeProduct(torch.nn.Module):
    """moe.py's `inv[perm] = torch.arange(perm.size(0))`, perm of batch*seq*top_k elements: an
    arange over a product of two dims is taken as shape [0]. --input x:batch,seq
    --dim seq=2:64:16"""
    def forward(self, x):
        return x.flatten() + torch.arange(x.size(0) * x.size(1))


class IntSumSymbolic(torch.nn.Module):
    """JetMoE's expert sizes (`gates.long().sum(0)` over the batch*seq tokens).
    --input x:batch,seq,4 --dim seq=2:64:16"""
    def forward(self, x):
        return (x > 0).long().flatten(0, 1).sum(0)


class ExpertLoop(torch.nn.Module):
    """The eager MoE loop (Mixtral `experts_implementation="eager"`, DBRX, SwitchTransformers):
    `expert_hit = torch.greater(mask.sum(...), 0).nonzero(); for e in expert_hit: ...`; a
    shape from values, by design. --input x:4,8"""
    def __init__(self):
        super().__init__()
        self.experts = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(4))

    def forward(self, x):
        idx = x.argmax(-1) % 4
        mask = torch.nn.functional.one_hot(idx, 4).permute(1, 0)
        out = torch.zeros_like(x)
        for e in torch.greater(mask.sum(-1), 0).nonzero():
            tok = torch.where(mask[e[0]])[0]
            out.index_add_(0, tok, self.experts[int(e[0])](x[tok]))
        return out


class FFT2(torch.nn.Module):
    """FNet's token mixing (`torch.fft.fftn(x, dim=(1, 2)).real`). --input x:2,8,16"""
    def forward(self, x):
        return torch.fft.fftn(x, dim=(1, 2)).real


class ToInForward(torch.nn.Module):
    """SwitchTransformers' router: `self.classifier = self.classifier.to(self.dtype)` in forward;
    torch.export cannot swap a parameter while tracing (the model's, not the importer's).
    --input x:2,8"""
    def __init__(self):
        super().__init__()
        self.classifier = torch.nn.Linear(8, 4)

    def forward(self, x):
        self.classifier = self.classifier.to(torch.float32)
        return self.classifier(x)


class NewEmptyConcat(torch.nn.Module):
    """DeepSeek-V3's expand_kv: `k = kv.new_empty(*kv.shape[:-1], a + b); k[..., :a].copy_(x);
    k[..., a:].copy_(y)` (a concat written as two copies into an uninitialised tensor).
    --input x:batch,seq,8 --dim seq=2:64:16"""
    def forward(self, x):
        k = x.new_empty(*x.shape[:-1], 12)
        k[..., :8].copy_(x)
        k[..., 8:].copy_(x[..., :4])
        return k


class SliceNegSymbolic(torch.nn.Module):
    """Flaubert/XLM without a cache object still run `input_ids[:, -slen:]` (slen = seq): a
    slice from -seq. --input x:batch,seq --dim seq=2:64:16"""
    def forward(self, x):
        return x[:, -x.size(1):] * 2


class SumOverBatch(torch.nn.Module):
    """The time-series models' mean scaler: `ts_sum.sum(dim=0)`, `num_observed.sum(0)` (a sum
    over the symbolic batch). --input x:batch,8"""
    def forward(self, x):
        return x.sum(0) / torch.clamp((x != 0).float().sum(0), min=1)


class RandomRotations(torch.nn.Module):
    """Reformer's LSH attention hashes with `torch.randn` rotations drawn in forward (after
    `torch.manual_seed(hash_seed)`): not a function of the input. --input x:2,8"""
    def forward(self, x):
        torch.manual_seed(0)
        r = torch.randn(8, 4)
        return torch.argmax(x @ r, dim=-1)


class SinkMax(torch.nn.Module):
    """GPT-OSS attention sinks: scores [batch, heads, seq, seq] concatenated with a per-head sink
    column, then `combined.max(dim=-1, keepdim=True).values` subtracted before the softmax.
    --input x:batch,4,seq,seq --dim seq=2:64:16"""
    def __init__(self):
        super().__init__()
        self.sinks = torch.nn.Parameter(torch.randn(4))

    def forward(self, x):
        s = self.sinks.reshape(1, -1, 1, 1).expand(x.shape[0], -1, x.shape[-2], -1)
        c = torch.cat([x, s], dim=-1)
        c = c - c.max(dim=-1, keepdim=True).values
        return torch.softmax(c, dim=-1)[..., :-1]


class LongT5Local(torch.nn.Module):
    """One LongT5 local self-attention layer (transformers' own, d_model 16, local_radius 4):
    torch.export fails inside torch while it words the dims it suggests (derived dim with
    min=0, max=-13). --input x:batch,seq,16 --dim seq=2:64:16"""
    def __init__(self):
        super().__init__()
        from transformers import LongT5Config
        from transformers.models.longt5 import modeling_longt5 as lt5
        self.mask = lt5._get_local_attention_mask
        cfg = LongT5Config(d_model=16, d_kv=4, num_heads=4, local_radius=4, encoder_attention_type="local")
        self.attn = lt5.LongT5LayerLocalSelfAttention(cfg, has_relative_attention_bias=True)

    def forward(self, x):
        mask = self.mask(torch.ones(x.shape[:2]), 5, x.device)
        return self.attn(x, attention_mask=torch.where(mask, 0.0, -1e10))[0]


class AnyItemBranch(torch.nn.Module):
    """LED/Longformer: `is_global_attn = is_index_global_attn.flatten().any().item()`, then
    `if is_global_attn:` (a branch on a tensor's value). --input x:2,8"""
    def forward(self, x):
        if (x < -100).flatten().any().item():
            return x * 2
        return x + 1


class LogicalAndInt(torch.nn.Module):
    """LongT5's local mask: `torch.logical_and(blocked_mask, three_blocked_mask)` on the int64
    attention_mask a tokenizer gives (PyTorch reads nonzero as true). --input x:2,8:int64"""
    def forward(self, x):
        return torch.logical_and(x.unsqueeze(-1), x.unsqueeze(-2)).float()


class LEDChunks(torch.nn.Module):
    """One LED encoder self-attention layer (transformers' own, window 8, hidden 16) over a
    symbolic length of whole windows: its sliding chunks (`as_strided` with strides from the
    length) stop torch.export at fake_impls' _compute_stride. --input x:batch,8*n,16
    --dim n=1:8:2"""
    def __init__(self):
        super().__init__()
        from transformers import LEDConfig
        from transformers.models.led.modeling_led import LEDEncoderSelfAttention
        cfg = LEDConfig(d_model=16, encoder_attention_heads=2, attention_window=[8])
        self.attn = LEDEncoderSelfAttention(cfg, layer_id=0)

    def forward(self, x):
        zeros = torch.zeros(x.shape[:2], dtype=torch.bool)
        return self.attn(x, attention_mask=torch.zeros(x.shape[:2]), is_index_masked=zeros,
                         is_index_global_attn=zeros, is_global_attn=False)[0]
