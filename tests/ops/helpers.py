"""One-node models built through the real spec loader, so every op test also exercises attribute
parsing, shape inference and the reference executor exactly as a user's spec would."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import yaml

from ait_build.errors import SpecError
from ait_build.ir.dtypes import from_numpy
from ait_build.ops.reference import run_reference
from ait_build.spec.model import load_model

_count = itertools.count()


def _plain(value):
    """Tuples (handy in tests) as YAML lists."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def write_spec(tmp_path, op: str, inputs: dict, attrs: dict, model_dims: dict | None = None,
               n_outputs: int = 1, dtype: str = "float32", outputs: list | None = None) -> str:
    """A model with the given inputs (name -> shape or (shape, dtype)) and one `op` node named
    'n' that reads all of them in order; `outputs` names the node's outputs (and the model's)."""
    spec_inputs = {}
    for name, shape in inputs.items():
        if isinstance(shape, tuple) and len(shape) == 2 and isinstance(shape[1], str):
            spec_inputs[name] = {"shape": _plain(shape[0]), "dtype": shape[1]}
        else:
            spec_inputs[name] = {"shape": _plain(shape)}
    node = {"name": "n", "op": op, **{k: _plain(v) for k, v in attrs.items()}}
    if inputs or op != "parameter":
        node["inputs"] = list(inputs)
    if outputs:
        node["outputs"] = list(outputs)
    doc = {"apiVersion": "ait-build/v1", "kind": "Model", "name": "one_op", "dtype": dtype,
           "dims": {k: ({"max": v} if isinstance(v, int) else v) for k, v in (model_dims or {}).items()},
           "inputs": spec_inputs or {"unused": {"shape": [1]}},
           "weights": {"random": {"seed": 0}},
           "graph": [node],
           "outputs": list(outputs) if outputs else
           ["n"] if n_outputs == 1 else [f"n:{i}" for i in range(n_outputs)]}
    if not doc["dims"]:
        del doc["dims"]
    path = tmp_path / f"op{next(_count)}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def build(tmp_path, op: str, inputs: dict, model_dims: dict | None = None, n_outputs: int = 1,
          outputs: list | None = None, **attrs):
    return load_model(write_spec(tmp_path, op, inputs, attrs, model_dims, n_outputs,
                                 outputs=outputs))


def out_types(tmp_path, op: str, inputs: dict, model_dims: dict | None = None, n_outputs: int = 1,
              **attrs) -> list:
    """[(shape as strings/ints, dtype)] of the node's outputs."""
    graph = build(tmp_path, op, inputs, model_dims, n_outputs, **attrs)
    return [([d.to_json() for d in graph.tensors[t].shape], graph.tensors[t].dtype)
            for t in graph.nodes[0].outputs]


def run(tmp_path, op: str, arrays: dict, weights: dict | None = None, shapes: dict | None = None,
        model_dims: dict | None = None, n_outputs: int = 1, **attrs) -> list:
    """Run one `op` node on `arrays` (name -> ndarray) with the reference executor.
    `weights` (role -> array) replace the random init; `shapes` give symbolic input shapes."""
    inputs = {}
    for name, arr in arrays.items():
        shape = (shapes or {}).get(name, list(arr.shape))
        dtype = from_numpy(arr.dtype)
        inputs[name] = (shape, dtype) if dtype != "float32" else shape
    graph = build(tmp_path, op, inputs, model_dims, n_outputs, **attrs)
    node = graph.nodes[0]
    for role, value in (weights or {}).items():
        name = node.weights[role]
        assert graph.weights.specs[name][0] == value.shape, f"weight '{role}' has the wrong shape"
        graph.weights.set(name, np.asarray(value, np.float32))
    feeds = arrays or {"unused": np.zeros(1, np.float32)}
    outs = run_reference(graph, feeds)
    return [outs[t] for t in graph.outputs]


def run1(tmp_path, op: str, arrays: dict, **kw) -> np.ndarray:
    (out,) = run(tmp_path, op, arrays, **kw)
    return out


def weights_of(tmp_path, op: str, inputs: dict, **attrs) -> dict:
    """role -> (weight name, shape) of the node's weights."""
    graph = build(tmp_path, op, inputs, **attrs)
    return {role: (name, [d.value for d in graph.tensors[name].shape])
            for role, name in graph.nodes[0].weights.items()}


def spec_error(tmp_path, op: str, inputs: dict, match: str, model_dims: dict | None = None,
               n_outputs: int = 1, **attrs) -> SpecError:
    """The SpecError that building the one-node model raises; its message must match `match`."""
    with pytest.raises(SpecError, match=match) as info:
        build(tmp_path, op, inputs, model_dims, n_outputs, **attrs)
    assert ":" in str(info.value).split(" error: ")[0], "the error must carry a location"
    return info.value


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
