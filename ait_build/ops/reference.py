"""The reference executor: runs a Graph in NumPy, one op row's reference at a time.

It is the oracle for every backend. Floating-point tensors are computed in float32 whatever the
model dtype (a float16 model's reference is its float32 ideal); integer tensors keep their type.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from ait_build.errors import AitError, OpError
from ait_build.ir.dims import shape_str
from ait_build.ir.dtypes import NUMPY, is_float
from ait_build.ir.graph import Graph
from ait_build.ops.registry import get_op


def bind_dims(graph: Graph, inputs: dict, given: dict | None = None) -> dict:
    """Dim values from the input arrays' shapes, and from `given` (name -> value) for dims no
    input names (an iota's length), checked against the spec's ranges."""
    env: dict = {}
    sized = []  # (input, axis, dim expression, size): solved once the plain names are bound
    for name in graph.inputs:
        if name not in inputs:
            raise AitError(f"missing input '{name}' (the model takes: {', '.join(graph.inputs)})")
        spec = graph.tensors[name]
        arr = inputs[name]
        if len(arr.shape) != len(spec.shape):
            raise AitError(f"input '{name}' has shape {list(arr.shape)}, expected rank {len(spec.shape)} "
                           f"{shape_str(spec.shape)}")
        for axis, (dim, size) in enumerate(zip(spec.shape, arr.shape)):
            if dim.is_static:
                if dim.value != size:
                    raise AitError(f"input '{name}' dim {axis} is {size}, expected {dim.value}")
                continue
            if len(dim.terms) != 1 or dim.terms[0][1] != 1 or len(dim.terms[0][0]) != 1:
                sized.append((name, axis, dim, size))  # 320*frames + 80
                continue
            (sym,) = dim.symbols
            if sym in env and env[sym] != size:
                raise AitError(f"dim '{sym}' is {env[sym]} in one input and {size} in '{name}'")
            r = graph.dims[sym]
            if not r.contains(size):
                raise AitError(f"input '{name}' dim {axis} ('{sym}') is {size}, outside [{r.min}, {r.max}]")
            env[sym] = size
    extra = set(inputs) - set(graph.inputs)
    if extra:
        raise AitError(f"unknown input(s): {', '.join(sorted(extra))}")
    for sym, size in (given or {}).items():
        if sym in graph.dims and sym not in env:
            r = graph.dims[sym]
            if not r.contains(size):
                raise AitError(f"dim '{sym}' is {size}, outside [{r.min}, {r.max}]")
            env[sym] = size
    _solve_sizes(graph, sized, env)
    used = {sym for t in graph.tensors.values() for d in t.shape for sym in d.symbols}
    unbound = sorted(used - set(env))
    if unbound:
        raise AitError(f"no input's shape tells dim(s) {', '.join(unbound)}: give "
                       + " ".join(f"--dim {sym}=N" for sym in unbound))
    return env


def _solve_sizes(graph: Graph, sized: list, env: dict) -> None:
    """Binds the dim of each input size written as an expression linear in one unbound dim
    (320*frames + 80 = 16080: frames = 50), then checks every such size."""
    for name, axis, dim, size in sized:
        free = sorted(dim.symbols - set(env))
        if len(free) == 1:
            at0 = dim.eval({**env, free[0]: 0})
            slope = dim.eval({**env, free[0]: 1}) - at0
            if slope > 0 and (size - at0) % slope == 0 and dim.eval(
                    {**env, free[0]: (size - at0) // slope}) == size:
                value = (size - at0) // slope
                r = graph.dims[free[0]]
                if not r.contains(value):
                    raise AitError(f"input '{name}' dim {axis} ({dim}) is {size}: '{free[0]}' "
                                   f"= {value}, outside [{r.min}, {r.max}]")
                env[free[0]] = value
        if dim.symbols <= set(env) and dim.eval(env) == size:
            continue
        raise AitError(f"input '{name}' dim {axis} is {size}, which is not {dim} at any value "
                       "of its dims" if not dim.symbols <= set(env) else
                       f"input '{name}' dim {axis} is {size}, but {dim} is {dim.eval(env)}")


def _as_reference(arr: np.ndarray, dtype: str) -> np.ndarray:
    if is_float(dtype):
        return np.asarray(arr).astype(np.float32)
    return np.asarray(arr).astype(NUMPY[dtype], copy=False)


def run_reference(graph: Graph, inputs: dict, keep_all: bool = False, progress=None,
                  dims: dict | None = None) -> dict:
    """Outputs (float32 for float tensors) for `inputs` (name -> array); `dims` gives the dims no
    input's shape tells. `progress(done, total, node)` is called after each node (see
    ProgressLine)."""
    env = bind_dims(graph, inputs, dims)
    values = {name: _as_reference(inputs[name], graph.tensors[name].dtype) for name in graph.inputs}
    last_use = {}
    for i, node in enumerate(graph.nodes):
        for t in node.inputs:
            last_use[t] = i
    for i, node in enumerate(graph.nodes):
        op = get_op(node.op)
        xs = [values[t] for t in node.inputs]
        ws = {role: graph.weights.get(w) for role, w in node.weights.items()}
        shapes = [tuple(d.eval(env) for d in graph.tensors[t].shape) for t in node.outputs]
        attrs = dict(node.attrs, _env=env, _out_shapes=shapes)
        try:
            # NaN and infinities in the inputs are values like any other: they propagate, as
            # they do in the built model, and --check compares them; no NumPy warnings
            with np.errstate(all="ignore"):
                outs = op.reference(attrs, xs, ws)
        except OpError as exc:
            raise AitError(f"{node.loc}: {node.op} '{node.name}': {exc}") from None
        for t, arr, shape in zip(node.outputs, outs, shapes):
            if tuple(arr.shape) != shape:
                raise AitError(f"internal: {node.op} '{node.name}' produced {list(arr.shape)}, "
                               f"inferred {list(shape)}")
            values[t] = _as_reference(arr, graph.tensors[t].dtype)
        if progress is not None:
            progress(i + 1, len(graph.nodes), node)
        if not keep_all:
            for t in node.inputs:
                if last_use.get(t) == i and t not in graph.outputs:
                    values.pop(t, None)
    if keep_all:
        return values
    return {name: values[name] for name in graph.outputs}


class ProgressLine:
    """A run_reference progress callback for the command line: silent for runs under `after`
    seconds, then a line every `every` seconds (`reference: 120/412 nodes, 30 s, at layer3.2`)
    and one at the end. BERT-base takes over a minute in NumPy."""

    def __init__(self, out=None, after: float = 3.0, every: float = 5.0):
        self.out = out or sys.stderr
        self.after, self.every = after, every
        self.start = time.monotonic()
        self.last = None  # time of the last line printed

    def __call__(self, done: int, total: int, node) -> None:
        now = time.monotonic()
        elapsed = now - self.start
        if elapsed < self.after:
            return
        if done < total and self.last is not None and now - self.last < self.every:
            return
        if done == total and self.last is None:
            return  # nothing was said yet: the run was short enough
        self.last = now
        self.out.write(f"reference: {done}/{total} nodes, {elapsed:.0f} s"
                       + (f", at {node.name}" if done < total else "") + "\n")
        self.out.flush()


def dim_values(ranges: dict, given: dict | None) -> dict:
    """Each dim's value: `given` (checked: known names, inside their ranges) or its opt.
    `ranges`: name -> anything with min, max and opt (a DimRange or a manifest's DimSpec)."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(ranges))
    if unknown:
        raise AitError(f"unknown dim(s) {', '.join(unknown)}; the model's dims: "
                       f"{', '.join(ranges) or 'none'}")
    for name, value in given.items():
        r = ranges[name]
        if not r.min <= value <= r.max:
            raise AitError(f"dim '{name}' is {value}, outside the model's range [{r.min}, {r.max}]")
    return {name: given.get(name, r.opt) for name, r in ranges.items()}


def random_inputs(graph: Graph, dims: dict | None = None, seed: int = 0) -> dict:
    """Random inputs at the given dim values (default: each dim's opt)."""
    rng = np.random.default_rng(seed)
    env = dim_values(graph.dims, dims)
    out = {}
    for name in graph.inputs:
        t = graph.tensors[name]
        shape = tuple(d.eval(env) for d in t.shape)
        if is_float(t.dtype):
            out[name] = rng.standard_normal(shape).astype(NUMPY[t.dtype])
        elif t.dtype == "bool":
            out[name] = rng.random(shape) < 0.5
        else:
            high = _index_bound(graph, name)
            out[name] = rng.integers(0, high, shape).astype(NUMPY[t.dtype])
    return out


def _index_bound(graph: Graph, name: str) -> int:
    """The largest safe value for an integer input: the smallest table it indexes (else 2)."""
    bound = None
    for node in graph.nodes:
        if name in node.inputs and node.op == "embedding":
            n = node.attrs["num_embeddings"]
            bound = n if bound is None else min(bound, n)
        if node.op == "gather" and len(node.inputs) > 1 and node.inputs[1] == name:
            data = graph.tensors[node.inputs[0]]
            dim = data.shape[node.attrs["axis"] % len(data.shape)]
            if dim.is_static:
                bound = dim.value if bound is None else min(bound, dim.value)
    return bound or 2
