"""An imported graph -> a model spec and its safetensors file, written together or not at all.

Both files are written under temporary names, the spec is loaded back through the real spec
loader with those weights (so a spec the tool could not build is never left behind), and only
then are both moved into place.
"""

from __future__ import annotations

import os
import tempfile

import yaml

from ait_build.importers.blocks import BlockPlan, fold_blocks
from ait_build.importers.entries import entry_text
from ait_build.importers.graph import ImportGraph
from ait_build.ir.weights import save_safetensors
from ait_build.spec.model import load_model


def spec_text(g: ImportGraph, weights_file: str, description: str, plan: BlockPlan) -> str:
    lines = ["apiVersion: ait-build/v1", "kind: Model", f"name: {g.name}"]
    lines.append("description: " + yaml.safe_dump(description, width=10**9).strip()
                 .removesuffix("...").strip())
    lines.append(f"dtype: {g.dtype}")
    if g.dims:
        lines.append("dims:")
        for name, (lo, hi, opt) in g.dims.items():
            lines.append(f"  {name}: {{min: {lo}, max: {hi}, opt: {opt}}}")
    lines.append("inputs:")
    for name, value in g.inputs:
        shape = ", ".join(str(d) for d in value.shape)
        dtype = "" if value.dtype == g.dtype else f", dtype: {value.dtype}"
        lines.append(f"  {name}: {{shape: [{shape}]{dtype}}}")
    lines.append(f"weights: {weights_file}")
    if plan.blocks:
        lines.append("blocks:")
        for block in plan.blocks:
            lines += block.lines()
    lines.append("graph:")
    for entry in plan.entries:
        lines.append("  - " + entry_text(entry))
    lines.append("outputs: [" + ", ".join(plan.outputs) + "]")
    return "\n".join(lines) + "\n"


def write_spec(g: ImportGraph, path: str, description: str, fold: bool = True) -> tuple:
    """Writes PATH and PATH's .safetensors; returns (spec path, weights path, Graph)."""
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, exist_ok=True)
    stem = os.path.splitext(os.path.basename(path))[0]
    weights_path = os.path.join(folder, stem + ".safetensors")
    plan = fold_blocks(g) if fold else BlockPlan.flat(g)
    fd_w, tmp_w = tempfile.mkstemp(dir=folder, prefix=f".{stem}.", suffix=".safetensors")
    fd_s, tmp_s = tempfile.mkstemp(dir=folder, prefix=f".{stem}.", suffix=".yaml")
    os.close(fd_w)
    os.close(fd_s)
    try:
        save_safetensors(g.weights, tmp_w)
        with open(tmp_s, "w") as fh:
            fh.write(spec_text(g, os.path.basename(weights_path), description, plan))
        load_model(tmp_s, weights=tmp_w)  # raises, and nothing is kept, if it does not load
        os.replace(tmp_w, weights_path)
        os.replace(tmp_s, path)
    finally:
        for tmp in (tmp_w, tmp_s):
            if os.path.exists(tmp):
                os.unlink(tmp)
    return path, weights_path, load_model(path)
