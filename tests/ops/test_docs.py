"""docs/ops.md is generated from the registry and must match it; its examples must be valid specs."""

import pathlib

import pytest
import yaml

from ait_build.spec.ops_doc import EXAMPLES, render, run_example
from ait_build.ops.registry import all_ops
from ait_build.spec.model import load_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
PUBLIC = sorted(name for name, op in all_ops().items() if not op.internal)


def test_docs_ops_md_matches_the_registry():
    page = (ROOT / "docs" / "ops.md").read_text()
    assert page == render(), "docs/ops.md is stale: run python -m ait_build.spec.ops_doc > docs/ops.md"


def test_every_public_op_has_an_example_and_internal_ops_are_listed_apart():
    assert sorted(EXAMPLES) == PUBLIC
    page = render()
    internal = [name for name, op in all_ops().items() if op.internal]
    head, _, passes = page.partition("## Ops created by passes")
    for name in internal:
        assert f"### `{name}`" in passes and f"### `{name}`" not in head
    for name in PUBLIC:
        assert f"### `{name}`" in head


@pytest.mark.parametrize("name", PUBLIC)
def test_example_loads_through_the_spec_loader(tmp_path, name):
    inputs, line = EXAMPLES[name]
    node = yaml.safe_load(line)
    spec_inputs = {}
    for iname, spec in inputs.items():
        shape, dtype = spec if isinstance(spec, tuple) else (spec, "float32")
        spec_inputs[iname] = {"shape": shape, "dtype": dtype}
    doc = {"apiVersion": "ait-build/v1", "kind": "Model", "name": "example",
           "dims": {"batch": {"max": 64}, "seq": {"max": 512}},
           "inputs": spec_inputs or {"unused": {"shape": [1]}},
           "graph": [node], "outputs": [node.get("name", name)] if name != "split"
           else [f"{node['name']}:{i}" for i in range(3)]}
    path = tmp_path / "example.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    graph = load_model(str(path))
    _, _, outs, weights = run_example(name)
    (built,) = graph.nodes
    assert [graph.tensors[t].shape for t in built.outputs] == [t.shape for t in outs]
    assert sorted(built.weights.values()) == sorted(w for w, _ in weights.values())


@pytest.mark.parametrize("name", PUBLIC)
def test_documented_weight_roles_are_the_ops_weights(name):
    op = all_ops()[name]
    _, _, _, weights = run_example(name)
    assert set(weights) <= {role for role, _ in op.weight_shapes}
    assert bool(op.weight_shapes) == bool(op.params)
