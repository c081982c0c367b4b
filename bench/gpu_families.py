"""The bandwidth-bound GPU kernel families on their real shapes: every distinct depthwise conv of
EfficientNet-B0, MobileNetV3-Large and ConvNeXt (with each model's bias and activation), the
global average pools of their squeeze-excitation blocks and heads (and ResNet-50's), and the SE
channel scale, at batch 128 in float16. Writes two specs of independent nodes (one input each,
so no node reads what the one before left in L2), builds them for h200 in one SCons run, times
every node with the library's time_steps() (CUDA events around each kernel, median of --runs),
and prints and writes (JSON, the path given) each node's time, the bytes it must move (input and
output once, weights) and the GB/s and fraction of the target's HBM bandwidth (4.8 TB/s) that
makes. The same depthwise convs (cuDNN, channels_last), pools and scales are timed in PyTorch
beside them (`vs_torch`: ours / PyTorch's time), and (unless --no-variants) each depthwise conv
also with other tiles of its kernel (bench/depthwise_variants.py), to show what the planner's
choice leaves.

    python bench/gpu_families.py out.json [--batch 128] [--dtype float16] [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import node_times  # noqa: E402
from bench.depthwise_variants import out_size, time_ms  # noqa: E402

# (model, input size, channels, kernel, stride, activation) of each distinct depthwise conv
DEPTHWISE = (
    [("efficientnet_b0", *s, "silu") for s in (
        (112, 32, 3, 1), (112, 96, 3, 2), (56, 144, 3, 1), (56, 144, 5, 2), (28, 240, 5, 1),
        (28, 240, 3, 2), (14, 480, 3, 1), (14, 480, 5, 1), (14, 672, 5, 1), (14, 672, 5, 2),
        (7, 1152, 5, 1), (7, 1152, 3, 1))]
    + [("mobilenet_v3_large", *s) for s in (
        (112, 16, 3, 1, "relu"), (112, 64, 3, 2, "relu"), (56, 72, 3, 1, "relu"),
        (56, 72, 5, 2, "relu"), (28, 120, 5, 1, "relu"), (28, 240, 3, 2, "hardswish"),
        (14, 200, 3, 1, "hardswish"), (14, 184, 3, 1, "hardswish"), (14, 480, 3, 1, "hardswish"),
        (14, 672, 3, 1, "hardswish"), (14, 672, 5, 2, "hardswish"), (7, 960, 5, 1, "hardswish"))]
    + [("convnext", size, c, 7, 1, "none")
       for size, c in ((56, 96), (28, 192), (14, 384), (7, 768))])
GOAL_OF_HBM = 0.6  # issue 26: every depthwise conv and pool at 60% of HBM bandwidth or more
# the CUDA cores' float32 FMA rate (TFLOP/s, two a FMA): 132 multiprocessors x 128 lanes x 1.98
# GHz on the H200 (its datasheet's 67): a depthwise conv computes on them, KH x KW FMAs an output,
# so a 7x7 one cannot run at 60% of HBM bandwidth whatever its memory access (`fma_ms`)
FP32_TFLOPS = 66.9
# (model, size, channels) of global average pools: SE blocks' and heads'
POOLS = [("efficientnet_b0", 112, 32), ("efficientnet_b0", 56, 144), ("efficientnet_b0", 28, 240),
         ("efficientnet_b0", 14, 672), ("efficientnet_b0", 7, 1152), ("efficientnet_b0", 7, 1280),
         ("mobilenet_v3_large", 7, 960), ("resnet50", 7, 2048)]
# (model, size, channels) of SE channel scales x * gate[n, c]
SCALES = [("efficientnet_b0", 112, 32), ("efficientnet_b0", 56, 144), ("efficientnet_b0", 28, 240),
          ("efficientnet_b0", 14, 672), ("efficientnet_b0", 7, 1152)]


def node_name(kind: str, model: str, size: int, c: int, extra: str = "") -> str:
    return f"{kind}_{model.split('_')[0]}_{size}x{c}{extra}"


def specs(batch: int, dtype: str) -> dict:
    """name -> (spec doc, {node: (kind, model, input shape, kernel, stride)})."""
    dims = {"batch": {"min": 1, "max": batch, "opt": batch}}
    docs = {}
    inputs, graph, outputs, info = {}, [], [], {}
    for model, size, c, k, s, act in DEPTHWISE:
        name = node_name("dw", model, size, c, f"_k{k}s{s}")
        inputs[name + "_x"] = {"shape": ["batch", size, size, c]}
        graph.append({"name": name, "op": "conv2d", "inputs": [name + "_x"], "out_channels": c,
                      "kernel": k, "stride": s, "padding": k // 2, "groups": c, "activation": act})
        outputs.append(name)
        info[name] = ("depthwise", model, (batch, size, size, c), k, s)
    docs["depthwise"] = (inputs, graph, outputs, info)
    inputs, graph, outputs, info = {}, [], [], {}
    for model, size, c in POOLS:
        name = node_name("gap", model, size, c)
        inputs[name + "_x"] = {"shape": ["batch", size, size, c]}
        graph.append({"name": name, "op": "global_avg_pool", "inputs": [name + "_x"]})
        outputs.append(name)
        info[name] = ("global_avg_pool", model, (batch, size, size, c), 0, 0)
    for model, size, c in SCALES:
        name = node_name("scale", model, size, c)
        inputs[name + "_x"] = {"shape": ["batch", size, size, c]}
        inputs[name + "_g"] = {"shape": ["batch", 1, 1, c]}
        graph.append({"name": name, "op": "mul", "inputs": [name + "_x", name + "_g"]})
        outputs.append(name)
        info[name] = ("channel_scale", model, (batch, size, size, c), 0, 0)
    docs["pools"] = (inputs, graph, outputs, info)
    out = {}
    for part, (ins, nodes, outs, info) in docs.items():
        doc = {"apiVersion": "ait-build/v1", "kind": "Model", "name": f"bench_families_{part}",
               "dtype": dtype, "dims": dims, "inputs": ins, "weights": {"random": {"seed": 0}},
               "graph": nodes, "outputs": outs}
        out[part] = (doc, info)
    return out


def write_specs(batch: int, dtype: str) -> dict:
    return node_times.write_specs(specs(batch, dtype))


def fma_ms(shape: tuple, k: int, s: int) -> float:
    """A depthwise conv's time at the CUDA cores' float32 FMA rate (FP32_TFLOPS), ms."""
    n, h, w, c = shape
    return 2 * k * k * n * out_size(h, k, s) * out_size(w, k, s) * c / (FP32_TFLOPS * 1e12) * 1e3


def torch_ms(kind: str, shape: tuple, k: int, s: int, dtype: str, runs: int) -> float | None:
    """PyTorch's time for the same op (channels_last, cuDNN for convs), median over `runs`."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    n, h, w, c = shape
    tdtype = getattr(torch, dtype)
    x = torch.randn(n, c, h, w, device="cuda", dtype=tdtype).to(memory_format=torch.channels_last)
    if kind == "depthwise":
        weight = torch.randn(c, 1, k, k, device="cuda", dtype=tdtype)
        bias = torch.randn(c, device="cuda", dtype=tdtype)
        def fn():
            return F.conv2d(x, weight, bias, stride=s, padding=k // 2, groups=c)
    elif kind == "global_avg_pool":
        def fn():
            return F.adaptive_avg_pool2d(x, 1)
    else:
        gate = torch.randn(n, c, 1, 1, device="cuda", dtype=tdtype)
        def fn():
            return x * gate
    with torch.no_grad():
        return time_ms(fn, runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out", nargs="?", default="gpu_families.json", help="JSON file to write")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16", "float32"))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--target", default="h200")
    ap.add_argument("--no-build", action="store_true", help="use the libraries already built")
    ap.add_argument("--no-variants", action="store_true",
                    help="skip the depthwise kernel's other tiles")
    ap.add_argument("--write-specs", action="store_true",
                    help="only write the specs and print their paths (comma-separated)")
    args = ap.parse_args()
    if args.write_specs:
        print(",".join(p for p, _, _ in write_specs(args.batch, args.dtype).values()))
        return 0

    from ait_build.pipeline import find_target
    from ait_build.backends import toolchain_for
    from bench import depthwise_variants

    paths = write_specs(args.batch, args.dtype)
    if not args.no_build:
        node_times.build(paths, args.target)
    target = find_target(args.target)
    results, plans = [], {}
    for part, (path, name, info) in paths.items():
        rows, plans[part] = node_times.time_nodes(path, name, target, {"batch": args.batch},
                                                  args.dtype, args.runs)
        for row in rows:
            if row["node"] not in info:
                continue
            kind, family, shape, k, s = info[row["node"]]
            row.update(kind=kind, model=family, shape=list(shape), kernel=k, stride=s,
                       of_hbm=row["gbps"] / (target.fact("hbm_tbps") * 1e3),
                       fma_ms=fma_ms(shape, k, s) if kind == "depthwise" else 0.0)
            row["torch_ms"] = torch_ms(kind, shape, k, s, args.dtype, args.runs)
            row["vs_torch"] = row["ms"] / row["torch_ms"] if row["torch_ms"] else None
            results.append(row)
    print(f"{'node':<34}{'kernel':<30}{'ms':>8}{'GB/s':>8}{'of HBM':>8}{'FMA ms':>8}"
          f"{'torch ms':>10}{'ours/torch':>11}")
    for r in results:
        torch_text = f"{r['torch_ms']:.4f}" if r["torch_ms"] is not None else "-"
        ratio = f"{r['vs_torch']:.2f}" if r["vs_torch"] is not None else "-"
        print(f"{r['node']:<34}{'+'.join(r['kernels'])[:29]:<30}{r['ms']:>8.4f}{r['gbps']:>8.0f}"
              f"{r['of_hbm']:>8.0%}{r['fma_ms']:>8.4f}{torch_text:>10}{ratio:>11}")
    for kind in ("depthwise", "global_avg_pool", "channel_scale"):
        rows = [r for r in results if r["kind"] == kind]
        if rows:
            ms, nbytes = sum(r["ms"] for r in rows), sum(r["bytes"] for r in rows)
            torch_total = sum(r["torch_ms"] or 0 for r in rows)
            worst = min(r["of_hbm"] for r in rows)
            at_goal = sum(r["of_hbm"] >= GOAL_OF_HBM for r in rows)
            print(f"{kind}: {len(rows)} nodes, {ms:.3f} ms (PyTorch {torch_total:.3f}), "
                  f"{nbytes / ms / 1e6:.0f} GB/s overall, worst {worst:.0%} of HBM, "
                  f"{at_goal} at >= {GOAL_OF_HBM:.0%}")
    report = {"batch": args.batch, "dtype": args.dtype, "target": args.target,
              "hbm_tbps": target.fact("hbm_tbps"), "rows": results, "variants": []}
    with open(args.out, "w") as fh:
        json.dump(report, fh, indent=1)
    if not args.no_variants:  # after the report is written: the sweep compiles for a while
        plan = plans["depthwise"]
        report["variants"] = depthwise_variants.sweep(
            plan, paths["depthwise"][2], plan.backend, toolchain_for(target),
            os.path.join(ROOT, "build", "bench_families_variants", args.target), args.batch,
            args.runs)
        print("\ndepthwise kernel tiles (channel slice, vN channels a thread, strip, strips x rows"
              "[, raw window]): ms; "
              "* planned")

        def tile(v: dict) -> str:
            wrong = f" DIFFERS by {v['max_diff']:.3g}" if v.get("max_diff", 0) else ""
            raw = ",raw" if v.get("raw_window") else ""
            return f"({v['slice']},v{v['vec']},{v['px']},{v['gw']}x{v['th']}{raw}){wrong}"
        for node in dict.fromkeys(v["node"] for v in report["variants"]):
            mine = [v for v in report["variants"] if v["node"] == node]
            best = min(mine, key=lambda v: v["ms"])
            print(f"  {node:<30}" + " ".join(
                f"{'*' if v['planned'] else ''}{tile(v)} {v['ms']:.4f}" for v in mine)
                + f"  best {tile(best)}")
        with open(args.out, "w") as fh:
            json.dump(report, fh, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
