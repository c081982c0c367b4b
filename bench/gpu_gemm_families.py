"""Grouped convs and causal attention on their real shapes, beside what they are measured against.

Every distinct grouped 3x3 conv of ResNeXt101_32x8d (8 to 64 channels per group) and of
RegNetX-3.2GF / RegNetY-3.2GF (48 and 24 per group) at batch 128, each next to the dense conv of
the same shape (groups = 1: the same input and output channels, G times the work), with bias
and relu fused; and GPT-2 medium's causal self-attention (batch 16, 1024 tokens, 16 heads of 64,
q, k and v read from the packed qkv projection). Writes three specs of independent nodes (one
input each), builds them for the target in one SCons run, times every node with the library's
time_steps() (CUDA events around each kernel, median of --runs), and prints and writes (JSON, the
path given) each node's time and TFLOP/s: a grouped conv's beside its dense twin's (the goal is
at least half of it), and PyTorch's (cuDNN, channels_last; scaled_dot_product_attention with
is_causal) on the same shapes. Causal attention counts the useful half of the scores' work.

    python bench/gpu_gemm_families.py out.json [--batch 128] [--dtype float16] [--runs 10]
    python bench/gpu_gemm_families.py out.json --candidates   # also every grouped-conv
        configuration, measured by `ait-build profile` (its table goes into the JSON)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import node_times  # noqa: E402

# (model, output size, channels, groups, stride) of each distinct grouped 3x3 conv; the input is
# the output size times the stride
GROUPED = (
    [("resnext101_32x8d", *s) for s in (
        (56, 256, 32, 1), (28, 512, 32, 2), (28, 512, 32, 1), (14, 1024, 32, 2),
        (14, 1024, 32, 1), (7, 2048, 32, 2), (7, 2048, 32, 1))]
    + [("regnet_x_3_2gf", *s) for s in (
        (56, 96, 2, 1), (28, 192, 4, 2), (28, 192, 4, 1), (14, 432, 9, 1), (7, 1008, 21, 1))]
    + [("regnet_y_3_2gf", *s) for s in ((28, 216, 9, 1), (14, 576, 24, 1))])
# GPT-2 medium: (batch, tokens, heads, head_dim)
ATTENTION = (16, 1024, 16, 64)


def conv_name(kind: str, model: str, size: int, c: int, g: int, s: int) -> str:
    return f"{kind}_{model.split('_')[0]}_{size}x{c}_g{g}_s{s}"


def specs(batch: int, dtype: str) -> dict:
    """part -> (spec doc, {node: info}): grouped convs, their dense twins, attention."""
    out = {}
    for part, dense in (("grouped", False), ("dense", True)):
        inputs, graph, outputs, info = {}, [], [], {}
        for model, size, c, g, s in GROUPED:
            name = conv_name(part, model, size, c, g, s)
            inputs[name + "_x"] = {"shape": ["batch", size * s, size * s, c]}
            graph.append({"name": name, "op": "conv2d", "inputs": [name + "_x"], "out_channels": c,
                          "kernel": 3, "stride": s, "padding": 1, "groups": 1 if dense else g,
                          "activation": "relu"})
            outputs.append(name)
            info[name] = dict(kind=part, model=model, size=size, channels=c, groups=g, stride=s,
                              pair=conv_name("grouped", model, size, c, g, s))
        out[part] = ({"batch": {"min": 1, "max": batch, "opt": batch}}, inputs, graph, outputs, info)
    b, seq, heads, hd = ATTENTION
    out["attention"] = (
        {"batch": {"min": 1, "max": b, "opt": b}, "seq": {"min": 1, "max": seq, "opt": seq}},
        {"qkv": {"shape": ["batch", "seq", 3 * heads * hd]}},
        [{"name": "gpt2_medium", "op": "multi_head_attention", "inputs": ["qkv"],
          "num_heads": heads, "head_dim": hd, "packed": True, "causal": True}],
        ["gpt2_medium"], {"gpt2_medium": dict(kind="causal_attention", model="gpt2_medium",
                                              batch=b, seq=seq, heads=heads, head_dim=hd)})
    docs = {}
    for part, (dims, inputs, graph, outputs, info) in out.items():
        docs[part] = ({"apiVersion": "ait-build/v1", "kind": "Model",
                       "name": f"bench_gemm_{part}", "dtype": dtype, "dims": dims,
                       "inputs": inputs, "weights": {"random": {"seed": 0}}, "graph": graph,
                       "outputs": outputs}, info)
    return docs


def write_specs(batch: int, dtype: str) -> dict:
    return node_times.write_specs(specs(batch, dtype))


def torch_ms(torch, info: dict, batch: int, dtype: str, runs: int) -> float | None:
    """PyTorch's time for the same op (cuDNN convs on channels_last; flash attention)."""
    import torch.nn.functional as F
    from ait_build.bench.cuda import event_times
    tdtype = getattr(torch, dtype)
    if info["kind"] == "causal_attention":
        b, s, h, d = info["batch"], info["seq"], info["heads"], info["head_dim"]
        qkv = torch.randn(b, s, 3, h, d, device="cuda", dtype=tdtype)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))

        def fn():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:
        size, c, s = info["size"], info["channels"], info["stride"]
        g = info["groups"] if info["kind"] == "grouped" else 1
        x = torch.randn(batch, c, size * s, size * s, device="cuda", dtype=tdtype)
        x = x.to(memory_format=torch.channels_last)
        w = torch.randn(c, c // g, 3, 3, device="cuda", dtype=tdtype).to(memory_format=torch.channels_last)
        bias = torch.randn(c, device="cuda", dtype=tdtype)

        def fn():
            return F.conv2d(x, w, bias, stride=s, padding=1, groups=g)
    with torch.no_grad():
        return statistics.median(event_times(torch, fn, 2, runs))


def candidates(path: str, batch: int, target: str, out_dir: str) -> list:
    """Every grouped-conv configuration's time per problem (`ait-build profile` on the grouped
    spec, its own journal and profile under out_dir): rows {family, problem, config, us}."""
    profile = os.path.join(out_dir, "grouped_profile.yaml")
    subprocess.run([sys.executable, "-m", "ait_build", "profile", path, "--target", target,
                    "--batch", str(batch), "--kernels", "conv2d_grouped", "--fresh", "-o", profile],
                   check=True, cwd=ROOT)
    rows = []
    with open(os.path.join(ROOT, "build", target, "profile", "journal.jsonl")) as fh:
        for line in fh:
            row = json.loads(line)
            family, problem, _ = row["key"]
            if family.startswith("conv2d_grouped"):
                rows.append(dict(family=family, problem=problem, **row["result"]))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out", nargs="?", default="gpu_gemm_families.json", help="JSON file to write")
    ap.add_argument("--batch", type=int, default=128, help="batch of the convs")
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--target", default="h200")
    ap.add_argument("--no-build", action="store_true", help="use the libraries already built")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch's timings")
    ap.add_argument("--candidates", action="store_true",
                    help="also time every grouped-conv configuration (ait-build profile)")
    ap.add_argument("--write-specs", action="store_true",
                    help="only write the specs and print their paths (comma-separated)")
    args = ap.parse_args()
    if args.write_specs:
        print(",".join(p for p, _, _ in write_specs(args.batch, args.dtype).values()))
        return 0

    import torch
    from ait_build.pipeline import find_target

    paths = write_specs(args.batch, args.dtype)
    if not args.no_build:
        node_times.build(paths, args.target)
    target = find_target(args.target)
    rows = {}
    for part, (path, name, info) in paths.items():
        env = {"batch": ATTENTION[0], "seq": ATTENTION[1]} if part == "attention" else \
            {"batch": args.batch}
        for row in node_times.time_nodes(path, name, target, env, args.dtype, args.runs)[0]:
            if row["node"] not in info:
                continue
            row.update(info[row["node"]])
            if row["kind"] == "causal_attention":  # the useful half of the scores' work
                row["flops"] //= 2
                row["tflops"] /= 2
            row["torch_ms"] = None if args.no_torch else torch_ms(torch, row, args.batch,
                                                                   args.dtype, args.runs)
            if row["torch_ms"]:
                row["torch_tflops"] = row["flops"] / (row["torch_ms"] / 1e3) / 1e12
            rows[row["node"]] = row
    for row in rows.values():
        if row["kind"] == "grouped":
            dense = rows.get(row["node"].replace("grouped_", "dense_", 1))
            if dense and dense["tflops"]:
                row["of_dense_tflops"] = row["tflops"] / dense["tflops"]
    print(f"{'node':<36}{'kernel':<28}{'ms':>8}{'TFLOP/s':>9}{'of dense':>9}{'torch ms':>10}"
          f"{'torch TF/s':>11}")
    for r in rows.values():
        torch_text = (f"{r['torch_ms']:>10.4f}{r['torch_tflops']:>11.1f}" if r.get("torch_ms")
                      else f"{'-':>10}{'-':>11}")
        dense = f"{r['of_dense_tflops']:>9.2f}" if "of_dense_tflops" in r else f"{'':>9}"
        print(f"{r['node']:<36}{'+'.join(r['kernels'])[:27]:<28}{r['ms']:>8.4f}{r['tflops']:>9.1f}"
              f"{dense}{torch_text}")
    grouped = [r for r in rows.values() if "of_dense_tflops" in r]
    if grouped:
        print(f"grouped convs: {sum(r['ms'] for r in grouped):.3f} ms in all (dense twins "
              f"{sum(rows[r['node'].replace('grouped_', 'dense_', 1)]['ms'] for r in grouped):.3f} ms"
              + (f", PyTorch {sum(r['torch_ms'] for r in grouped):.3f} ms" if all(
                  r.get("torch_ms") for r in grouped) else "")
              + f"); of the dense TFLOP/s: worst {min(r['of_dense_tflops'] for r in grouped):.2f}, "
              f"median {statistics.median(r['of_dense_tflops'] for r in grouped):.2f}")
    report = {"batch": args.batch, "dtype": args.dtype, "target": args.target,
              "device": torch.cuda.get_device_name(), "rows": list(rows.values()), "candidates": []}
    with open(args.out, "w") as fh:
        json.dump(report, fh, indent=1)
    if args.candidates:  # after the report is written: the profile compiles for a while
        report["candidates"] = candidates(paths["grouped"][0], args.batch, args.target,
                                          os.path.dirname(os.path.abspath(args.out)))
        for r in report["candidates"]:
            print(f"  {r['family']} {r['problem']}: {r['config']} "
                  f"{r.get('us', float('nan')):.1f} us {r.get('error', '')}")
        with open(args.out, "w") as fh:
            json.dump(report, fh, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
