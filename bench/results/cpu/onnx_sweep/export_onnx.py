"""Export the ONNX sweep's models to .onnx files, as a user who then only has the file would:
bench/import_sweep.py's tiny transformers configurations and torchvision classifiers at full
size, with `torch.onnx.export`'s default (torch.export-based) exporter and dynamic batch (and
sequence) axes, or with `--legacy` its TorchScript exporter (`dynamo=False`, `dynamic_axes`).

    PYTHONPATH=bench python bench/results/cpu/onnx_sweep/export_onnx.py distilbert opt --out /tmp/ox
    PYTHONPATH=bench python bench/results/cpu/onnx_sweep/export_onnx.py --legacy gptj --out /tmp/ox

Each file is written as OUT/NAME.onnx (NAME_ts.onnx with --legacy); each line says the file, or
the exporter's last error line. The import flags for each file are printed after it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import traceback

import torch

import import_sweep  # bench/import_sweep.py: the tiny configurations

TORCHVISION = {"mobilenet_v3_small": 224, "efficientnet_b0": 224, "regnet_y_400mf": 224,
               "shufflenet_v2_x0_5": 224, "squeezenet1_1": 224}


def model_and_inputs(name: str):
    """(module, example inputs, input names, {input: {axis: dim name}}, import flags)."""
    if name in TORCHVISION:
        import torchvision
        torch.manual_seed(0)
        size = TORCHVISION[name]
        model = getattr(torchvision.models, name)(weights=None).eval()
        return (model, (torch.randn(2, 3, size, size),), ["x"], {"x": {0: "batch"}},
                ["--dim", "batch=1:8:2"])
    make, size, seq = import_sweep.TRANSFORMERS[name]
    model = make()
    if getattr(model.config, "use_cache", False):  # a DynamicCache output stops the exporter
        model.config.use_cache = False
    if size:
        return (model, (torch.randn(2, 3, size, size),), ["pixel_values"],
                {"pixel_values": {0: "batch"}}, ["--dim", "batch=1:8:2"])
    ids = torch.randint(3, 100, (2, seq or 8))
    axes = {0: "batch"} if seq else {0: "batch", 1: "seq"}
    return (model, (ids,), ["input_ids"], {"input_ids": axes},
            ["--dim", "batch=1:8:2"] + ([] if seq else ["--dim", "seq=2:16:8"]))


def export(name: str, out: str, legacy: bool) -> str:
    model, example, names, axes, flags = model_and_inputs(name)
    path = os.path.join(out, f"{name}{'_ts' if legacy else ''}.onnx")
    with contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
        if legacy:
            torch.onnx.export(model, example, path, dynamo=False, input_names=names,
                              dynamic_axes=axes, opset_version=17)
        else:
            dims = {}
            shapes = tuple({i: dims.setdefault(d, torch.export.Dim(d, min=1, max=64))
                            for i, d in axes[n].items()} for n in names)
            torch.onnx.export(model, example, path, dynamo=True, dynamic_shapes=shapes,
                              input_names=names)
    return path + " " + " ".join(flags)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--out", default="onnx_sweep")
    ap.add_argument("--legacy", action="store_true", help="the TorchScript exporter")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models:
        try:
            print(name, "EXPORTED", export(name, args.out, args.legacy), flush=True)
        except Exception as exc:  # a sweep reports every model
            cause = exc.__cause__ or exc  # torch.onnx wraps the exporter's own error
            line = (traceback.format_exception_only(cause)[-1].strip().splitlines() or [""])[0]
            print(name, "EXPORT FAILED", line[:300], flush=True)


if __name__ == "__main__":
    sys.exit(main())
