"""manifest.json of a built model: its dims, inputs and outputs, and binding dim values from input
shapes. Pure Python and NumPy, so it is tested without a compiler."""

from __future__ import annotations

import ast
import json
import numbers
import os
from dataclasses import dataclass
from functools import lru_cache

from ait_build.codegen.digest import json_sha256
from ait_build.errors import AitError
from ait_build.files.read import read_bytes
from ait_build.ir.dtypes import NUMPY

MAX_MANIFEST_BYTES = 64 << 20  # a real manifest is a few KB; a bigger file is not one


class ModelError(AitError):
    """A built model refused a call: bad inputs, a bad weights file or a kernel error."""


@dataclass(frozen=True)
class DimSpec:
    name: str
    min: int
    max: int
    opt: int


@dataclass(frozen=True)
class TensorSpec:
    name: str
    dtype: str
    shape: tuple  # int or dim expression ("batch", "batch*seq")

    def shape_text(self) -> str:
        return "[" + ", ".join(str(d) for d in self.shape) + "]"


@dataclass(frozen=True)
class Manifest:
    name: str
    target: str
    backend: str
    device: str  # 'host': inputs and outputs are host memory; else the device API ('cuda')
    dims: tuple  # DimSpec, in the order the C API takes them
    inputs: tuple  # TensorSpec, in the order the C API takes them
    outputs: tuple
    weights_file: str
    weights_bytes: int
    weights_sha256: str
    build_id: str
    c_name: str  # prefix of the C API's symbols: ait_<name> with '-' as '_'
    raw: dict

    @property
    def dim_names(self) -> list:
        return [d.name for d in self.dims]

    @property
    def libraries(self) -> dict:
        """{package: version} of the headers and libraries the build was compiled against."""
        return self.raw.get("compiler", {}).get("libraries", {})


def libraries_text(libraries: dict) -> str:
    """{'mkl': '2026.2.1'} -> 'mkl 2026.2.1' (the cpu target's BLAS is whichever is installed)."""
    return ", ".join(f"{k} {v}" for k, v in sorted(libraries.items()))


def load_manifest(path: str) -> Manifest:
    """The manifest of a build folder, checked against its build_id (the hash of its other
    fields) before anything in it is used: a hand-edited manifest is an error."""
    raw = _read_json(path)
    recorded = raw.get("build_id")
    if not isinstance(recorded, str):
        raise ModelError(f"{path}: no build_id; rebuild the model with this ait-build")
    if json_sha256(raw) != recorded:
        raise ModelError(f"{path} was changed after the build (its content no longer matches its "
                         "build_id); rebuild the model instead of editing the manifest")
    if "device" not in raw:
        raise ModelError(f"{path}: no 'device' field (made by an older ait-build); rebuild the model "
                         "with this ait-build")
    try:
        weights = raw["weights"]
        manifest = Manifest(
            name=_text(raw["name"]), target=_text(raw["target"]), backend=_text(raw["backend"]),
            device=_text(raw["device"]),
            dims=tuple(DimSpec(_text(d["name"]), _count(d["min"]), _count(d["max"]),
                               _count(d["opt"])) for d in raw["dims"]),
            inputs=tuple(_tensor(t) for t in raw["inputs"]),
            outputs=tuple(_tensor(t) for t in raw["outputs"]),
            weights_file=_text(weights["file"]), weights_bytes=_count(weights["bytes"]),
            weights_sha256=_text(weights["sha256"]), build_id=recorded,
            c_name=_text(raw["c_name"]), raw=raw)
        _consistent(manifest)
        return manifest
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelError(f"{path}: not a valid ait-build manifest ({type(exc).__name__}: {exc})") from None


def _consistent(manifest: Manifest) -> None:
    """What the runtime relies on: known dtypes, shapes over the manifest's own dims, divisions
    by nonzero numbers (a sealed manifest written by hand could say otherwise)."""
    names = {d.name for d in manifest.dims}
    for t in manifest.inputs + manifest.outputs:
        if t.dtype not in NUMPY:
            raise ValueError(f"tensor '{t.name}' has dtype '{t.dtype}'")
        for d in t.shape:
            if isinstance(d, int):
                continue
            unknown = symbols(d) - names
            if unknown:
                raise ValueError(f"tensor '{t.name}' size '{d}' names dims {sorted(unknown)} the "
                                 "manifest does not declare")
            if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.FloorDiv) and not (
                    isinstance(n.right, ast.Constant) and n.right.value > 0)
                   for n in ast.walk(_parse(d))):
                raise ValueError(f"tensor '{t.name}' size '{d}' divides by something other "
                                 "than a positive number")


def _read_json(path: str) -> dict:
    try:
        data = read_bytes(path, MAX_MANIFEST_BYTES)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read the manifest ({exc.strerror}); is this a build "
                         "directory (build/<target>/<model>)?") from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise ModelError(f"{path}: larger than {MAX_MANIFEST_BYTES >> 20} MiB; not a manifest")
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ModelError(f"{path}: not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise ModelError(f"{path}: not an ait-build manifest (a JSON object)")
    return raw


def _text(value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _count(value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError(f"expected a non-negative integer, got {value!r}")
    return value


def _tensor(raw: dict) -> TensorSpec:
    shape = tuple(_count(d) if isinstance(d, int) and not isinstance(d, bool) else _text(d)
                  for d in raw["shape"])
    for d in shape:
        if isinstance(d, str):
            _parse(d)  # reject a malformed expression when loading, not when running
    return TensorSpec(_text(raw["name"]), _text(raw["dtype"]), shape)


# -- dim expressions ------------------------------------------------------------------------------
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b}


@lru_cache(maxsize=None)
def _parse(text: str) -> ast.AST:
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ModelError(f"bad dim expression '{text}' in the manifest") from None
    for node in ast.walk(tree):
        ok = isinstance(node, (ast.Name, ast.BinOp, ast.UnaryOp, ast.USub, ast.Load)) or \
            type(node) in _BINOPS or (isinstance(node, ast.Constant) and type(node.value) is int)
        if not ok:
            raise ModelError(f"bad dim expression '{text}' in the manifest")
    return tree


def symbols(expr) -> set:
    if isinstance(expr, int):
        return set()
    return {n.id for n in ast.walk(_parse(expr)) if isinstance(n, ast.Name)}


def evaluate(expr, env: dict) -> int:
    """Value of an int or a dim expression ('2*batch*seq + 1') with the dims in `env`."""
    if isinstance(expr, int):
        return expr

    def ev(node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.UnaryOp):
            return -ev(node.operand)
        return _BINOPS[type(node.op)](ev(node.left), ev(node.right))

    return ev(_parse(expr))


# -- binding --------------------------------------------------------------------------------------
def unknown_keys(given, known) -> list:
    """The keys of `given` not in `known`, sorted, as a message names them: a key that is not a
    string (a TensorSpec, a position) by its repr."""
    return sorted(k if isinstance(k, str) else repr(k) for k in given if k not in known)


def bind_dims(manifest: Manifest, shapes: dict, given: dict | None = None) -> dict:
    """Dim values from the input shapes (name -> tuple), checked for rank, static sizes, ranges and
    consistency. `given` fixes dims up front. Expressions such as 'batch*seq' are solved for their
    one unknown dim when it appears nowhere else."""
    if given is not None and not isinstance(given, dict):
        raise ModelError(f"{manifest.name}: dims must be a dict of dim name -> integer, got "
                         f"{type(given).__name__}")
    env = {}
    for name, value in (given or {}).items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ModelError(f"{manifest.name}: dim '{name}' must be an integer, got "
                             f"{type(value).__name__} ({value!r:.40})")
        env[name] = int(value)
    unknown = unknown_keys(env, manifest.dim_names)
    if unknown:
        raise ModelError(f"{manifest.name}: unknown dim(s) {', '.join(unknown)}; the model's "
                         f"dims: {', '.join(manifest.dim_names) or 'none'}")
    pending = []  # (input, axis, expression, size)
    for spec in manifest.inputs:
        shape = shapes[spec.name]
        if len(shape) != len(spec.shape):
            raise ModelError(f"input '{spec.name}' has shape {list(shape)} (rank {len(shape)}); "
                             f"expected rank {len(spec.shape)} {spec.shape_text()}")
        for axis, (dim, size) in enumerate(zip(spec.shape, shape)):
            if isinstance(dim, int):
                if dim != size:
                    raise ModelError(f"input '{spec.name}' has shape {list(shape)}; axis {axis} "
                                     f"must be {dim} {spec.shape_text()}")
            elif dim.isidentifier():
                if env.setdefault(dim, size) != size:
                    raise ModelError(f"dim '{dim}' is {env[dim]} elsewhere but {size} in input "
                                     f"'{spec.name}' (axis {axis}) {spec.shape_text()}")
            else:
                pending.append((spec, axis, dim, size))
    _solve(pending, env)
    missing = [d for d in manifest.dim_names if d not in env]
    if missing:
        raise ModelError(f"{manifest.name}: cannot tell dim(s) {', '.join(missing)} from the input "
                         "shapes; pass them as dims={...}")
    for d in manifest.dims:
        if not d.min <= env[d.name] <= d.max:
            raise ModelError(f"dim '{d.name}' is {env[d.name]}, outside the model's range "
                             f"[{d.min}, {d.max}]")
    for spec, axis, dim, size in pending:
        if evaluate(dim, env) != size:
            raise ModelError(f"input '{spec.name}' axis {axis} is {size}, but {dim} = "
                             f"{evaluate(dim, env)} {spec.shape_text()}")
    return env


def _solve(pending: list, env: dict) -> None:
    """Fills dims that appear only in expressions linear in them (n*x + c = size)."""
    progress = True
    while progress:
        progress = False
        for _, _, dim, size in pending:
            free = symbols(dim) - set(env)
            if len(free) != 1:
                continue
            (name,) = free
            at0, at1 = evaluate(dim, {**env, name: 0}), evaluate(dim, {**env, name: 1})
            slope = at1 - at0
            if slope > 0 and (size - at0) % slope == 0 and (size - at0) // slope > 0:
                value = (size - at0) // slope
                if evaluate(dim, {**env, name: value}) == size:
                    env[name] = value
                    progress = True


def output_shapes(manifest: Manifest, env: dict) -> dict:
    shapes = {o.name: tuple(evaluate(d, env) for d in o.shape) for o in manifest.outputs}
    for o in manifest.outputs:
        if any(size < 0 for size in shapes[o.name]):
            given = ", ".join(f"{k}={v}" for k, v in sorted(env.items()))
            raise ModelError(f"{manifest.name}: output '{o.name}' {o.shape_text()} would have "
                             f"shape {list(shapes[o.name])} at {given}: the model has no "
                             "output at these dims")
    return shapes


def weights_path(build_dir: str, manifest: Manifest) -> str:
    return os.path.join(build_dir, manifest.weights_file)
