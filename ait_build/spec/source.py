"""The `source:` field of a model spec: what `ait-build import` read the model from, so that
`ait-build bench --vs torch,onnxruntime` can rebuild the same model (a PyTorch module from its
factory, or an ONNX Runtime session from the file) and compare with it.

It also holds two digests: of the graph section as the import wrote it (`graph_sha256`, over
GRAPH_SECTION) and of the weights file it wrote (`weights_sha256`). A spec whose graph section
no longer matches was edited after import and computes something else than its source; a new
weights file (a fine-tuned checkpoint) is fine, as bench loads the spec's weights into the
source model.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from ait_build.errors import SpecError
from ait_build.files.read import sha256_file
from ait_build.ir.dtypes import FLOAT_DTYPES
from ait_build.spec.fields import check_keys, expect_list, expect_map, get, string_list
from ait_build.spec.yamlfile import YMap, plain, where

IMPORTERS = ("torch", "onnx")
SOURCE_FIELDS = ("importer", "factory", "args", "file", "file_sha256", "inputs", "dims", "dtype",
                 "layouts", "weights_sha256", "graph_sha256", "doc")
# the fields whose digest tells a hand edit: what the model computes (not its dims' ranges, dtype
# or weights, which bench can change or the user may widen without changing the function)
GRAPH_SECTION = ("inputs", "blocks", "graph", "outputs")
FACTORY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class ModelSource:
    importer: str  # torch or onnx
    graph_sha256: str
    factory: str = ""  # torch: MODULE:FACTORY
    args: dict = field(default_factory=dict)  # torch: the factory's keyword arguments
    file: str = ""  # onnx: the file, relative to the spec
    file_sha256: str = ""
    inputs: tuple = ()  # the import's --input values, NAME:SHAPE[:DTYPE]
    dims: tuple = ()  # its --dim values
    dtype: str = "float32"  # its --dtype
    layouts: dict = field(default_factory=dict)  # tensor -> perm: ours = source.permute(perm)
    weights_sha256: str = ""  # "" for random weights


def parse_source(doc: YMap) -> ModelSource | None:
    """The spec's `source:` field checked (SpecError with its place), or None without one."""
    if "source" not in doc:
        return None
    what = "source"
    spec = expect_map(doc["source"], where(doc, "source"), what)
    check_keys(spec, SOURCE_FIELDS, what, required=("importer", "graph_sha256"))
    importer = get(spec, "importer", str, what)
    if importer not in IMPORTERS:
        raise SpecError(f"source importer must be one of {', '.join(IMPORTERS)}, got "
                        f"'{importer}'", where(spec, "importer"))
    needed = ("factory",) if importer == "torch" else ("file", "file_sha256")
    for key in needed:
        if key not in spec:
            raise SpecError(f"a source from {importer} needs '{key}'", spec.loc)
    factory = get(spec, "factory", str, what, default="")
    if factory and not FACTORY.fullmatch(factory):
        raise SpecError(f"source factory must be MODULE:FACTORY (e.g. torchvision.models:resnet50), "
                        f"got '{factory}'", where(spec, "factory"))
    args = expect_map(spec["args"], where(spec, "args"), "source args") if "args" in spec else {}
    dtype = get(spec, "dtype", str, what, default="float32")
    if dtype not in FLOAT_DTYPES:
        raise SpecError(f"source dtype must be one of {', '.join(FLOAT_DTYPES)}, got '{dtype}'",
                        where(spec, "dtype"))
    digests = {key: _digest(spec, key) for key in ("graph_sha256", "weights_sha256", "file_sha256")}
    return ModelSource(importer=importer, factory=factory, args=plain(args),
                       file=get(spec, "file", str, what, default=""),
                       inputs=string_list(spec, "inputs", what), dims=string_list(spec, "dims", what), dtype=dtype,
                       layouts=_layouts(spec), **digests)


def _digest(spec: YMap, key: str) -> str:
    value = get(spec, key, str, "source", default="")
    if value and not SHA256.fullmatch(value):
        raise SpecError(f"source {key} must be 64 lowercase hex digits (a SHA-256), got "
                        f"'{value}'", where(spec, key))
    return value


def _layouts(spec: YMap) -> dict:
    """`layouts: {NAME: [0, 2, 3, 1]}`: each a permutation of 0..rank-1."""
    if "layouts" not in spec:
        return {}
    layouts = expect_map(spec["layouts"], where(spec, "layouts"), "source layouts")
    out = {}
    for name, perm in layouts.items():
        perm = expect_list(perm, layouts.where(name), f"source layout of '{name}'")
        if sorted(p for p in perm if isinstance(p, int)) != list(range(len(perm))):
            raise SpecError(f"source layout of '{name}' must be a permutation of 0..{len(perm) - 1}, "
                            f"got {list(perm)}", layouts.where(name))
        out[name] = tuple(perm)
    return out


def graph_digest(doc: dict) -> str:
    """SHA-256 of the spec's graph section (GRAPH_SECTION) as canonical JSON, without its `doc`
    texts: the same however the file is formatted, commented or documented."""
    section = {key: _without_docs(plain(doc[key])) for key in GRAPH_SECTION if key in doc}
    text = json.dumps(section, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _without_docs(value):
    if isinstance(value, dict):
        return {k: _without_docs(v) for k, v in value.items() if k != "doc"}
    if isinstance(value, list):
        return [_without_docs(v) for v in value]
    return value


def file_digest(path: str) -> str:
    """SHA-256 of a file's bytes (a regular file's: see files/read.py)."""
    return sha256_file(path)
