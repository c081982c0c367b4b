"""The imported seed models (docs/import.md, "On the GPU") against their float32 PyTorch modules
on the GPU: the same module the importer read (bench/import_models.py regenerates it from its
seed), the same random inputs; relative L2 and max error over max |output| per case, with
PyTorch's own float16 beside ours. Writes a JSON list and exits 1 when a case is over the GPU
tests' bounds (tests/backends/cuda/test_gpu_vs_torch.py: relative L2 1e-2, max 2e-2)."""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench import import_models  # noqa: E402
from ait_build.runtime import Model  # noqa: E402

CASES = [("resnet50", {"batch": 1}), ("resnet50", {"batch": 8}), ("vit_b16", {"batch": 1}),
         ("vit_b16", {"batch": 8}), ("bert_base", {"batch": 1, "seq": 128}),
         ("bert_base", {"batch": 8, "seq": 128})]
REL_L2, MAX_REL = 1e-2, 2e-2


def shape(name: str, dims: dict) -> tuple:
    if name == "bert_base":
        return (dims["batch"], dims["seq"], 768)
    return (dims["batch"], 3, 224, 224)


def errors(got: np.ndarray, want: np.ndarray) -> dict:
    diff = got.astype(np.float64) - want.astype(np.float64)
    return {"rel_l2": float(np.linalg.norm(diff) / np.linalg.norm(want)),
            "max_rel_to_scale": float(np.abs(diff).max() / np.abs(want).max())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    results, failed = [], False
    for name, dims in CASES:
        build = os.path.join("build", "h200", f"{name}_imported")
        if not os.path.isfile(os.path.join(build, "manifest.json")):
            print(json.dumps({"model": name, **dims, "ok": False, "error": f"no build in {build}"}))
            failed = True
            continue
        model = Model(build)
        module = getattr(import_models, name)().cuda()
        x = np.random.default_rng(7).standard_normal(shape(name, dims)).astype(np.float16)
        (ours,) = model.run({model.manifest.inputs[0].name: x}).values()
        ours = ours if isinstance(ours, np.ndarray) else ours.numpy()  # a DeviceArray copies back
        with torch.inference_mode():
            xt = torch.from_numpy(x).cuda()
            want = module(xt.float()).float().cpu().numpy()
            half = module.half()(xt).float().cpu().numpy()
        row = {"model": name, **dims, "ours": errors(ours.astype(np.float32), want),
               "torch_float16": errors(half, want)}
        row["ok"] = row["ours"]["rel_l2"] <= REL_L2 and row["ours"]["max_rel_to_scale"] <= MAX_REL
        failed |= not row["ok"]
        results.append(row)
        print(json.dumps(row))
        model.close()
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
