"""Which common torch ops import: one tiny module per op, import_torch, record the first error line."""
import sys, json, traceback
import torch
from torch import nn
import torch.nn.functional as F
from ait_build.importers.from_torch import import_torch
from ait_build.importers.options import parse_input, parse_dim, dims_for

PROBES = {
 "max_pool1d": lambda x: F.max_pool1d(x.flatten(2), 3, 2),
 "avg_pool1d": lambda x: F.avg_pool1d(x.flatten(2), 3, 2),
 "avg_pool1d_pad": lambda x: F.avg_pool1d(x.flatten(2), 4, 3, padding=2, ceil_mode=True, count_include_pad=False),
 "sum_all": lambda x: x.sum() + x,
 "mean_all": lambda x: x.mean() * x,
 "any_all": lambda x: ((x > 3).any().float() + (x > -9).all().float()) * x,
 "round_dec": lambda x: torch.round(x, decimals=2),
 "var_corr0": lambda x: torch.var(x, dim=(1, 2), correction=0),
 "std_mean": lambda x: torch.std_mean(x, dim=-1)[0] + torch.std_mean(x, dim=-1)[1],
 "max_pool1d_idx": lambda x: F.max_pool1d(x.flatten(2), 3, 2, return_indices=True)[0],
 "max_pool1d_dil": lambda x: F.max_pool1d(x.flatten(2), 3, 1, padding=1, dilation=2),
 "interp_linear1d_corners": lambda x: F.interpolate(x.flatten(2), size=17, mode="linear", align_corners=True),
 "interp_nearest_exact1d": lambda x: F.interpolate(x.flatten(2), size=31, mode="nearest-exact"),
 "adaptive_max_pool2d": lambda x: F.adaptive_max_pool2d(x, 1),
 "adaptive_avg_pool2d_3": lambda x: F.adaptive_avg_pool2d(x, 3),
 "pixel_shuffle": lambda x: F.pixel_shuffle(x, 2),
 "pixel_unshuffle": lambda x: F.pixel_unshuffle(x, 2),
 "glu": lambda x: F.glu(x, 1),
 "logsumexp": lambda x: torch.logsumexp(x, -1),
 "log_softmax": lambda x: F.log_softmax(x, -1),
 "softplus": lambda x: F.softplus(x),
 "mish": lambda x: F.mish(x),
 "elu": lambda x: F.elu(x),
 "selu": lambda x: F.selu(x),
 "celu": lambda x: F.celu(x),
 "leaky_relu": lambda x: F.leaky_relu(x, 0.1),
 "prelu": lambda x: F.prelu(x, torch.full((8,), 0.2)),
 "softsign": lambda x: F.softsign(x),
 "tanhshrink": lambda x: F.tanhshrink(x),
 "logsigmoid": lambda x: F.logsigmoid(x),
 "hardshrink": lambda x: F.hardshrink(x),
 "floor": lambda x: torch.floor(x),
 "round": lambda x: torch.round(x),
 "trunc": lambda x: torch.trunc(x),
 "frac": lambda x: torch.frac(x),
 "exp2": lambda x: torch.exp2(x),
 "log2": lambda x: torch.log2(x.abs() + 1),
 "log1p": lambda x: torch.log1p(x.abs()),
 "expm1": lambda x: torch.expm1(x),
 "reciprocal": lambda x: torch.reciprocal(x),
 "square": lambda x: torch.square(x),
 "atan": lambda x: torch.atan(x),
 "atan2": lambda x: torch.atan2(x, x + 1),
 "tan": lambda x: torch.tan(x),
 "asin": lambda x: torch.asin(x.clamp(-1, 1)),
 "sinh": lambda x: torch.sinh(x),
 "cosh": lambda x: torch.cosh(x),
 "var": lambda x: x.var(-1),
 "std": lambda x: x.std(-1),
 "var_mean": lambda x: torch.var_mean(x, -1)[0],
 "norm_p2": lambda x: x.norm(dim=-1),
 "prod": lambda x: x.prod(-1),
 "amax": lambda x: x.amax(-1),
 "amin": lambda x: x.amin((2, 3)),
 "any": lambda x: (x > 0).any(-1).float(),
 "all": lambda x: (x > 0).all(-1).float(),
 "cumprod": lambda x: torch.cumprod(x, -1),
 "cummax": lambda x: torch.cummax(x, -1)[0],
 "topk": lambda x: torch.topk(x, 3, -1)[0],
 "sort": lambda x: torch.sort(x, -1)[0],
 "argsort": lambda x: torch.argsort(x, -1).float(),
 "kthvalue": lambda x: torch.kthvalue(x, 2, -1)[0],
 "median": lambda x: x.median(-1)[0],
 "argmin": lambda x: x.argmin(-1).float(),
 "reflect_pad": lambda x: F.pad(x, (1, 1, 2, 2), mode="reflect"),
 "replicate_pad": lambda x: F.pad(x, (1, 1, 2, 2), mode="replicate"),
 "circular_pad": lambda x: F.pad(x, (1, 1, 2, 2), mode="circular"),
 "grid_sample": lambda x: F.grid_sample(x, torch.tanh(x[:, :2, :, :].permute(0, 2, 3, 1)) * 1.2, align_corners=False),
 "grid_sample_ac": lambda x: F.grid_sample(x, torch.tanh(x[:, :2, :, :].permute(0, 2, 3, 1)) * 1.2, align_corners=True),
 "grid_sample_border": lambda x: F.grid_sample(x, torch.tanh(x[:, :2, :, :].permute(0, 2, 3, 1)) * 1.2, padding_mode="border"),
 "grid_sample_nearest": lambda x: F.grid_sample(x, torch.tanh(x[:, :2, :, :].permute(0, 2, 3, 1)) * 1.2, mode="nearest"),
 "channel_shuffle": lambda x: F.channel_shuffle(x, 2),
 "interp_linear1d": lambda x: F.interpolate(x.flatten(2), scale_factor=2, mode="linear"),
 "interp_nearest1d": lambda x: F.interpolate(x.flatten(2), scale_factor=2, mode="nearest"),
 "interp_area": lambda x: F.interpolate(x, size=(3, 3), mode="area"),
 "interp_bilinear_aa": lambda x: F.interpolate(x, size=(3, 3), mode="bilinear", antialias=True),
 "conv_transpose1d": lambda x: F.conv_transpose1d(x.flatten(2), torch.randn(8, 4, 3), stride=2),
 "tril": lambda x: torch.tril(x),
 "triu": lambda x: torch.triu(x, 1),
 "masked_fill_lt": lambda x: x.masked_fill(x < 0, 0.5),
 "scatter": lambda x: torch.zeros_like(x).scatter(-1, torch.zeros_like(x, dtype=torch.long), x),
 "index_put": lambda x: x.index_put((torch.tensor([0]),), torch.tensor(1.0)),
 "clamp_tensor": lambda x: torch.clamp(x, min=x * 0.5),
 "lerp": lambda x: torch.lerp(x, x * 2, 0.3),
 "hypot": lambda x: torch.hypot(x, x),
 "logical_xor": lambda x: torch.logical_xor(x > 0, x < 1).float(),
 "bitwise_not": lambda x: (~(x > 0)).float(),
 "isinf": lambda x: torch.isinf(x).float(),
 "nan_to_num": lambda x: torch.nan_to_num(x),
 "heaviside": lambda x: torch.heaviside(x, torch.tensor(0.5)),
 "cosine_similarity": lambda x: F.cosine_similarity(x, x + 1, dim=1),
 "pairwise_distance": lambda x: F.pairwise_distance(x.flatten(1), x.flatten(1) + 1),
 "cdist": lambda x: torch.cdist(x.flatten(2), x.flatten(2)),
 "outer": lambda x: torch.outer(x[0, 0, 0], x[0, 0, 1]),
 "baddbmm": lambda x: torch.baddbmm(x.flatten(2)[:, :4, :4], x.flatten(2)[:, :4], x.flatten(2)[:, :, :4].transpose(1,2)[:, :, :4].transpose(1,2)),
 "local_response_norm": lambda x: F.local_response_norm(x, 3),
 "instance_norm": lambda x: F.instance_norm(x),
 "instance_norm_affine": lambda x: F.instance_norm(x, weight=torch.linspace(0.5, 2, 8), bias=torch.linspace(-1, 1, 8)),
 "normalize_p1": lambda x: F.normalize(x, p=1, dim=1),
 "unfold_tensor": lambda x: x.unfold(3, 2, 2).flatten(3),
 "diff": lambda x: torch.diff(x, dim=-1),
 "roll_flat": lambda x: torch.roll(x, 3),
 "flip": lambda x: torch.flip(x, (2, 3)),
 "rot90": lambda x: torch.rot90(x, 1, (2, 3)),
 "einsum_bhwc": lambda x: torch.einsum("bchw,bchw->bc", x, x),
 "stack": lambda x: torch.stack([x, x * 2], 1).flatten(1, 2),
 "where_scalar": lambda x: torch.where(x > 0, x, 0.0),
 "sign_bits": lambda x: torch.signbit(x).float(),
 "clamp_int": lambda x: (x * 10).long().clamp(-3, 3).float(),
 "bucketize": lambda x: torch.bucketize(x, torch.tensor([-1.0, 0.0, 1.0])).float(),
 "one_hot": lambda x: F.one_hot((x.abs() * 2).long().clamp(max=3), 4).float().flatten(3),
 "embedding_bag": lambda x: F.embedding_bag(torch.tensor([[0, 1], [2, 3]]), torch.randn(5, 3)).sum() + x,
}

class Probe(nn.Module):
    def __init__(self, fn):
        super().__init__(); self.fn = fn
    def forward(self, x):
        return self.fn(x)

import os
def factory():
    return Probe(PROBES[os.environ["PROBE"]]).eval()

if __name__ == "__main__":
    names = sys.argv[1:] or list(PROBES)
    inputs = [parse_input("x:batch,8,6,4")]
    dims = dims_for(inputs, [parse_dim("batch=1:4:2")])
    res = {}
    os.makedirs("/tmp/probe", exist_ok=True)
    for name in names:
        os.environ["PROBE"] = name
        try:
            import numpy as np
            from ait_build.importers.simplify import simplify
            from ait_build.ops.reference import run_reference
            g = import_torch("op_probe:factory", None, inputs, dims, name)
            from ait_build.importers.write import write_spec
            _, _, graph = write_spec(g, f"/tmp/probe/{name}.yaml", "probe")
            x = np.random.default_rng(0).standard_normal((2, 8, 6, 4)).astype(np.float32) * 2
            with torch.no_grad():
                want = factory().eval()(torch.from_numpy(x))
            want = [w.numpy() for w in (want if isinstance(want, (tuple, list)) else [want])]
            got = run_reference(graph, {"x": x})
            errs = []
            for o, w in zip(graph.outputs, want):
                a = got[o].astype(np.float64); w = w.astype(np.float64)
                same_nan = np.array_equal(np.isnan(a), np.isnan(w))
                ok = np.isfinite(w)
                e = np.abs(a[ok] - w[ok]).max() / max(np.abs(w[ok]).max(), 1e-30) if ok.any() else 0
                errs.append(f"{e:.1e}{'' if same_nan else ' NaN-mismatch'}")
            res[name] = "ok " + " ".join(errs)
        except BaseException as e:
            res[name] = (str(e).strip().splitlines() or [type(e).__name__])[-1][:200]
        print(f"{name}: {res[name]}", flush=True)
