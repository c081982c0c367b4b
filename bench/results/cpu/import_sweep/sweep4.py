"""The fourth import sweep (README_sweep4.md): each hf_models4 factory imported with `ait-build
import torch` as a user would (180 s at most), then the spec's NumPy reference compared with the
module its `source:` rebuilds at batch 3 (the export's example batch is 2) and, for a symbolic
length, at two lengths. One line a model.

    cd /work/main && PYTHONPATH=bench/results/cpu/import_sweep python3 bench/results/cpu/import_sweep/sweep4.py NAME... --out /tmp/hf4
"""
import argparse, os, subprocess, sys, time

import numpy as np

TEXT = ["--input", "input_ids:batch,seq:int64", "--dim", "seq=2:64:16"]
SERIES = ["--input", "past_values:batch,19", "--input", "future_values:batch,8"]
IMG = ["--input", "pixel_values:batch,3,64,64"]
AUDIO = ["--input", "x:batch,1610"]
SPECIAL = {
    "gpt_oss": ["--input", "input_ids:batch,seq:int64", "--dim", "seq=8:64:16"],  # sliding window 8: seq >= 7, != 7
    "reformer_fixed": ["--input", "input_ids:batch,32:int64"], "longt5_tglobal_fixed": ["--input", "input_ids:batch,32:int64"],
    "gpt_oss_batched": ["--input", "input_ids:batch,seq:int64", "--dim", "seq=8:64:16"],
    "led_encoder_fixed": ["--input", "input_ids:batch,32:int64"],
    "longt5_local_fixed": ["--input", "input_ids:batch,32:int64"],
    "big_bird_sparse_fixed": ["--input", "input_ids:batch,32:int64"],
    "reformer": ["--input", "input_ids:batch,8*chunks:int64", "--dim", "chunks=1:8:2"],
    "big_bird_sparse": ["--input", "input_ids:batch,2*blocks:int64", "--dim", "blocks=8:32:16"],
    "time_series_transformer": SERIES, "informer": SERIES, "informer_full": SERIES, "autoformer": SERIES,
    "patchtst": ["--input", "x:batch,32,3"], "patchtsmixer": ["--input", "x:batch,32,3"],
    "perceiver": ["--input", "x:batch,seq,32", "--dim", "seq=4:64:16"],
    "owlvit_vision": IMG, "vit_mae_noise": IMG, "blip_vision": IMG, "focalnet": IMG,
    "wav2vec2_conformer": AUDIO, "sew_d": AUDIO, "ast": ["--input", "x:batch,64,32"],
}


def flags(name):
    return SPECIAL.get(name, TEXT)


def feed(graph, size, batch):
    rng = np.random.default_rng(0)
    out = {}
    env = {d: (batch if d == "batch" else size) for d in graph.dims}
    for n in graph.inputs:
        shape = [d.eval(env) for d in graph.tensors[n].shape]
        out[n] = rng.integers(3, 900, shape) if "ids" in n else rng.standard_normal(shape).astype(np.float32)
    return out


def check(spec, name, sizes, batch=3):
    import torch
    from ait_build.bench.source_twin import comparison_twin
    from ait_build.ops.reference import run_reference
    from ait_build.spec.model import load_model
    graph = load_model(spec)
    twin = comparison_twin(spec, graph, name)
    res = []
    for size in sizes:
        x = feed(graph, size, batch)
        ref = run_reference(graph, x)
        with torch.no_grad():
            want = twin.module(*twin.to_args(x))
        want = want if isinstance(want, (tuple, list)) else [want]
        rel = mx = 0.0
        for o, w in zip(twin.outputs, want):
            w = w.numpy()
            rel = max(rel, float(np.linalg.norm(ref[o] - w) / (np.linalg.norm(w) + 1e-30)))
            mx = max(mx, float(np.abs(ref[o] - w).max()))
        res.append((size, rel, mx))
    return len(graph.nodes), list(graph.dims), res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--out", default="/tmp/hf4")
    ap.add_argument("--timeout", type=int, default=180)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.models:
        spec = os.path.join(a.out, name + ".yaml")
        cmd = ["nice", "-n", "10", "timeout", str(a.timeout), sys.executable, "-m", "ait_build", "import",
               "torch", f"hf_models4:{name}", *flags(name), "--dim", "batch=1:4:2", "-o", spec]
        t = time.time()
        done = subprocess.run(cmd, capture_output=True, text=True)
        took = time.time() - t
        with open(os.path.join(a.out, name + ".log"), "w") as f:
            f.write(" ".join(cmd) + "\n" + done.stdout + done.stderr)
        if done.returncode:
            lines = [l for l in (done.stderr + done.stdout).strip().splitlines() if l.strip()]
            why = f"timeout ({a.timeout} s)" if done.returncode == 124 else " | ".join(lines[-2:])
            print(f"{name}: IMPORT FAILED ({took:.0f} s): {why}", flush=True)
            continue
        try:
            sym = any(f.startswith(("seq", "chunks", "blocks")) for f in flags(name))
            sizes = {"reformer": (2, 4), "big_bird_sparse": (8, 24)}.get(name, (8, 40) if sym else (0,))
            nodes, dims, res = check(spec, name, sizes)
            print(f"{name}: imported in {took:.0f} s, {nodes} nodes; batch 3: "
                  + "; ".join((f"size {s}: " if sym else "") + f"rel L2 {r:.1e}, max {m:.1e}" for s, r, m in res), flush=True)
        except Exception as exc:
            print(f"{name}: imported in {took:.0f} s; CHECK ERROR {type(exc).__name__}: {str(exc)[:300]}", flush=True)


if __name__ == "__main__":
    main()
