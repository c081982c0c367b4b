"""The nn.MultiheadAttention encoder of this folder's cpu runs (random init, seeded)."""
import torch


class MhaBlock(torch.nn.Module):
    """A user's block with nn.MultiheadAttention called the default way (need_weights=True)."""

    def __init__(self, dim=64, heads=4, batch_first=True):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.attn = torch.nn.MultiheadAttention(dim, heads, batch_first=batch_first)
        self.batch_first = batch_first

    def forward(self, x):
        y = self.norm(x)
        out, _ = self.attn(y, y, y)
        return x + out


def mha_default():
    torch.manual_seed(0)
    return MhaBlock()


def mha_seq_first():
    torch.manual_seed(0)
    return MhaBlock(batch_first=False)


class MhaEncoder(torch.nn.Module):
    """Six pre-norm blocks of nn.MultiheadAttention (called the default way) and an MLP."""

    def __init__(self, dim=512, heads=8, depth=6):
        super().__init__()
        self.blocks = torch.nn.ModuleList(MhaBlock(dim, heads) for _ in range(depth))
        self.mlps = torch.nn.ModuleList(torch.nn.Sequential(
            torch.nn.LayerNorm(dim), torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(),
            torch.nn.Linear(4 * dim, dim)) for _ in range(depth))

    def forward(self, x):
        for block, mlp in zip(self.blocks, self.mlps):
            x = block(x)
            x = x + mlp(x)
        return x


def mha_encoder():
    torch.manual_seed(0)
    return MhaEncoder()
