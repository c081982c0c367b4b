"""The second import sweep (README.md): each model imported with `ait-build import torch` as a
user would, then its spec's NumPy reference compared with the module its `source:` rebuilds
(float32, batch 1 and the sizes below). One line a model: imported or the import's last line.

    cd bench/results/cpu/import_sweep && PYTHONPATH=. python3 sweep2.py NAME... --out /tmp/sw2
"""
import argparse, os, subprocess, sys, time

import numpy as np

TEXT = ["--input", "input_ids:batch,seq:int64", "--dim", "seq=2:64:16"]
S2S = ["--input", "input_ids:batch,seq:int64", "--input", "decoder_input_ids:batch,tgt:int64",
       "--dim", "seq=2:64:16", "--dim", "tgt=2:64:16"]
IMG = ["--input", "pixel_values:batch,3,64,64"]
VIDEO = ["--args", '{"weights": null}', "--input", "x:batch,3,8,112,112"]
SPECIAL = {"bart": S2S, "t5": S2S, "fcn_resnet50": ["--input", "x:batch,3,64,64"],
           "deeplabv3_mobilenet_v3_large": ["--input", "x:batch,3,64,64"],
           "lraspp_mobilenet_v3_large": ["--input", "x:batch,3,64,64"],
           "canine": ["--input", "input_ids:batch,seq:int64", "--dim", "seq=4:64:16"],
           # its landmarks reshape the sequence by config.segment_means_seq_len (16): that size
           "nystromformer": ["--input", "input_ids:batch,16:int64"],
           "canine_fixed": ["--input", "input_ids:batch,16:int64"],
           "funnel_fixed": ["--input", "input_ids:batch,16:int64"],
           # its last pool is (2, 7, 7) over T/8 and H/32
           "s3d": ["--args", '{"weights": null}', "--input", "x:batch,3,16,224,224"],
           "s3d_scaled": ["--input", "x:batch,3,16,224,224"]}
VISION = {"mobilevitv2_scaled", "vit_mae", "data2vec_vision", "swinv2", "mobilevitv2", "regnet_hf", "resnet_hf", "cvt",
          "bit", "glpn", "dpt"}
VIDEOS = {"mc3_18", "r2plus1d_18", "s3d"}


def flags(name):
    if name in SPECIAL:
        return SPECIAL[name]
    return IMG if name in VISION else VIDEO if name in VIDEOS else TEXT


def feed(graph, seq):
    rng = np.random.default_rng(0)
    out = {}
    for n in graph.inputs:
        env = {d: (1 if d == "batch" else seq) for d in graph.dims}
        shape = [d.eval(env) for d in graph.tensors[n].shape]
        out[n] = rng.integers(3, 900, shape) if "ids" in n else \
            rng.standard_normal(shape).astype(np.float32)
    return out


def check(spec, name, seqs=(16,)):
    import torch
    from ait_build.bench.source_twin import comparison_twin
    from ait_build.ops.reference import run_reference
    from ait_build.spec.model import load_model
    graph = load_model(spec)
    twin = comparison_twin(spec, graph, name)
    errs = []
    for seq in seqs:
        x = feed(graph, seq)
        ref = run_reference(graph, x)
        with torch.no_grad():
            want = twin.module(*twin.to_args(x))
        want = want if isinstance(want, (tuple, list)) else [want]
        errs.append(max(float(np.linalg.norm(ref[o] - w.numpy()) / (np.linalg.norm(w.numpy()) + 1e-30))
                        for o, w in zip(twin.outputs, want)))
    return len(graph.nodes), errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--out", default="/tmp/sw2")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.models:
        spec = os.path.join(a.out, name + ".yaml")
        factory = f"torchvision.models.video:{name}" if name in VIDEOS else f"hf_models2:{name}"
        cmd = ["nice", "-n", "19", "timeout", "600", sys.executable, "-m", "ait_build", "import",
               "torch", factory, *flags(name), "--dim", "batch=1:4:2", "-o", spec]
        t = time.time()
        done = subprocess.run(cmd, capture_output=True, text=True)
        took = time.time() - t
        if done.returncode:
            lines = [l for l in (done.stderr or done.stdout).strip().splitlines() if l.strip()]
            print(f"{name}: IMPORT FAILED ({took:.0f} s): " + " | ".join(lines[-3:]), flush=True)
            continue
        try:
            seqs = (2, 16, 64) if flags(name) in (TEXT, S2S) or name == "canine" else (0,)
            nodes, errs = check(spec, name, seqs)
            print(f"{name}: imported in {took:.0f} s, {nodes} nodes, relative L2 against PyTorch "
                  + ", ".join(f"{e:.1e}" for e in errs)
                  + (f" (seq {', '.join(map(str, seqs))})" if seqs != (0,) else ""), flush=True)
        except Exception as exc:
            print(f"{name}: imported in {took:.0f} s; CHECK ERROR {type(exc).__name__}: {str(exc)[:300]}", flush=True)


if __name__ == "__main__":
    main()
