"""An imported graph -> a model spec and its safetensors file, written together or not at all.

Both files are written under temporary names, the spec is loaded back through the real spec
loader with those weights (so a spec the tool could not build is never left behind), and only
then are both moved into place.
"""

from __future__ import annotations

import os

import yaml

from ait_build.errors import AitError, SpecError
from ait_build.files.output import Staged, check_output
from ait_build.importers.blocks import BlockPlan, fold_blocks
from ait_build.importers.entries import entry_text
from ait_build.importers.graph import ImportGraph
from ait_build.importers.options import DEFAULT_MAX
from ait_build.ir.weights import save_safetensors
from ait_build.spec.model import load_model
from ait_build.spec.yamlfile import load_yaml


def scalar(text) -> str:
    """A name or text as a YAML scalar that reads back as the same string (`0`, `true`, `a #b`
    quoted)."""
    return yaml.safe_dump(text, width=10**9).strip().removesuffix("...").strip()


def spec_text(g: ImportGraph, weights_file: str, description: str, plan: BlockPlan) -> str:
    lines = ["apiVersion: ait-build/v1", "kind: Model", f"name: {scalar(g.name)}"]
    lines.append("description: " + scalar(description))
    lines.append(f"dtype: {g.dtype}")
    if g.dims:
        lines.append("dims:")
        for name, (lo, hi, opt) in g.dims.items():
            lines.append(f"  {scalar(name)}: {{min: {lo}, max: {hi}, opt: {opt}}}")
    lines.append("inputs:")
    for name, value in g.inputs:
        shape = ", ".join(str(d) if d.is_static else scalar(str(d)) for d in value.shape)
        dtype = "" if value.dtype == g.dtype else f", dtype: {value.dtype}"
        lines.append(f"  {scalar(name)}: {{shape: [{shape}]{dtype}}}")
    lines.append(f"weights: {scalar(weights_file)}")
    if plan.blocks:
        lines.append("blocks:")
        for block in plan.blocks:
            lines += block.lines()
    lines.append("graph:")
    for entry in plan.entries:
        lines.append("  - " + entry_text(entry))
    lines.append("outputs: " + entry_text(list(plan.outputs)))
    return "\n".join(lines) + "\n"


def not_loading(exc: SpecError, text: str, source: str) -> str:
    """The error of a spec the import made that does not load, about the source (the spec, a
    temporary file, is gone): the message and the line of the spec it is about, which holds the
    source's name for the tensor, node or size."""
    lines = text.splitlines()
    line = exc.loc.line if exc.loc is not None else 0
    where = f" (in the spec's line `{shown_line(lines[line - 1])}`)" if 0 < line <= len(lines) else ""
    hint = ""
    if exc.message.endswith("at every value of its range"):  # a size past a table (positions)
        hint = (f": narrow it with the import's `--dim NAME=MIN:MAX` (a dim without one is "
                f"1:{DEFAULT_MAX})")
    return f"{source}: the spec made from it would not load: {exc.message}{hint}{where}"


def shown_line(line: str, limit: int = 120) -> str:
    line = line.strip()
    return line if len(line) <= limit else line[:limit - 3] + "..."


def weights_beside(spec: str) -> str:
    return os.path.splitext(spec)[0] + ".safetensors"


def check_outputs(spec: str, inputs=()) -> None:
    """Before the import: `spec` (-o) names a .yaml file, and neither it nor the weights file
    beside it is an input, a device, a folder or a file the import must not replace: an
    existing spec must be a model spec, an existing weights file the one that spec names (a
    re-import). A checkpoint that happens to sit where the weights would go is the user's."""
    if not spec.endswith((".yaml", ".yml")):
        raise AitError(f"-o {spec}: give the spec file to write (.yaml); its weights go beside "
                       "it, as the same name with .safetensors")
    weights = weights_beside(spec)
    for path in (spec, weights):
        check_output(path, inputs, devices=False, make_folder=True)
    named = None
    if os.path.exists(spec):
        try:
            doc = load_yaml(spec)
        except AitError:
            doc = {}
        if doc.get("kind") != "Model":
            raise AitError(f"{spec} exists and is not a model spec; remove it or give another -o")
        named = doc.get("weights")
        named = named.get("file") if isinstance(named, dict) else named
    if os.path.exists(weights) and named != os.path.basename(weights):
        raise AitError(f"{weights} exists and is not the weights file of {spec}: the import "
                       "would replace it; move it or give another -o")


def write_spec(g: ImportGraph, path: str, description: str, fold: bool = True,
               source: str = "") -> tuple:
    """Writes PATH and PATH's .safetensors; returns (spec path, weights path, Graph). `source`
    (the ONNX file, the factory) is what an error about the spec made from it names."""
    path = os.path.abspath(path)
    weights_path = weights_beside(path)
    plan = fold_blocks(g) if fold else BlockPlan.flat(g)
    text = spec_text(g, os.path.basename(weights_path), description, plan)
    with Staged(weights_path) as weights, Staged(path) as spec:
        save_safetensors(g.weights, weights.tmp)
        with open(spec.tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:  # nothing is kept if it does not load
            load_model(spec.tmp, weights=weights.tmp)
        except SpecError as exc:
            raise AitError(not_loading(exc, text, source or path)) from None
        weights.commit()
        spec.commit()
    return path, weights_path, load_model(path)
