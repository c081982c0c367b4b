"""The `source:` field an import adds to the spec it wrote (spec/source.py reads it): the
PyTorch factory with its arguments, or the ONNX file with its digest; the import's --input,
--dim and --dtype; the layout of any input or output the import did not keep as the source has
it; and digests of the weights file and of the graph section as written, so that
`ait-build bench --vs torch,onnxruntime` can rebuild the model and tell a spec edited by hand.
"""

from __future__ import annotations

import json
import os

import yaml

from ait_build.files.output import Staged
from ait_build.files.read import read_text
from ait_build.importers.graph import ImportGraph, identity
from ait_build.spec.model import load_model
from ait_build.spec.source import file_digest, graph_digest
from ait_build.spec.yamlfile import load_yaml

SOURCE_KEY = "source:"


def torch_source(args, graph: ImportGraph, spec_path: str) -> dict:
    """The source of `ait-build import torch` (its parsed command line `args`)."""
    return dict({"importer": "torch", "factory": args.factory,
                 "args": json.loads(args.args) if args.args else {}}, **_settings(args, graph))


def onnx_source(args, graph: ImportGraph, spec_path: str) -> dict:
    """The source of `ait-build import onnx`: the file relative to the spec, and its digest."""
    folder = os.path.dirname(os.path.abspath(spec_path))
    return dict({"importer": "onnx",
                 "file": os.path.relpath(os.path.abspath(args.model), folder).replace(os.sep, "/"),
                 "file_sha256": file_digest(args.model)}, **_settings(args, graph))


def _settings(args, graph: ImportGraph) -> dict:
    out = {"inputs": list(args.input), "dims": list(args.dim), "dtype": args.dtype}
    values = [v for _, v in graph.inputs] + [graph.values[ref] for ref in graph.outputs]
    layouts = {v.ref: list(v.perm) for v in values if v.perm != identity(v.rank)}
    if layouts:
        out["layouts"] = layouts
    return out


def record_source(spec_path: str, source: dict) -> None:
    """Writes `source` (with the digests of the spec's weights file, if it names one, and of its
    graph section) as the spec's last field, replacing one already there."""
    text = without_source(read_text(spec_path))
    doc = load_yaml(spec_path)
    source = {k: v for k, v in source.items() if k not in ("weights_sha256", "graph_sha256")}
    weights = doc.get("weights")
    weights = weights.get("file") if isinstance(weights, dict) else weights
    if isinstance(weights, str):  # a file, or the file beside random weights
        source["weights_sha256"] = file_digest(os.path.join(os.path.dirname(spec_path), weights))
    source["graph_sha256"] = graph_digest(doc)
    text += yaml.safe_dump({"source": source}, sort_keys=False, default_flow_style=None,
                           width=100)
    with Staged(spec_path) as staged:
        with open(staged.tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        load_model(staged.tmp)  # the field as the loader checks it
        staged.commit()


def without_source(text: str) -> str:
    """The spec's text without a `source:` field written as the last one (by record_source)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith(SOURCE_KEY):
            return "".join(lines[:i])
    return text
