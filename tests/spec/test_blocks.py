"""Blocks: params with types and defaults, repeat and its naming, `$i`, `when`, block outputs,
nested blocks and included block files."""

from __future__ import annotations

import os

import pytest

from ait_build.errors import SpecError
from ait_build.spec.blocks import load_blocks
from ait_build.spec.model import load_model

MLP_BLOCK = """
blocks:
  mlp:
    params:
      hidden: {type: int}
      act: {type: str, default: relu}
      bias: true
    graph:
      - {name: fc, op: linear, out_features: $hidden, bias: $bias}
      - {name: act, op: $act}
"""


def _model(write, graph, outputs="[b]", blocks=MLP_BLOCK, extra=""):
    return write("m.yaml", "name: m\ndims: {batch: {max: 4}}\ninputs:\n  x: {shape: [batch, 16]}\n"
                 f"{extra}\ngraph:\n{graph}\noutputs: {outputs}\n{blocks}")


def test_params_take_arguments_and_defaults(write):
    g = load_model(_model(write, "  - {name: b, block: mlp, args: {hidden: 8}}"))
    assert [(n.name, n.op) for n in g.nodes] == [("b.fc", "linear"), ("b.act", "relu")]
    assert g.node("b.fc").attrs["out_features"] == 8 and g.node("b.fc").attrs["bias"] is True
    g = load_model(_model(write, "  - {name: b, block: mlp, args: {hidden: 4, act: gelu, bias: false}}"))
    assert g.node("b.act").op == "gelu"
    assert g.weight_names() == ["b.fc.weight"]  # bias: false


def test_repeat_names_instances_like_pytorch_sequential(write):
    g = load_model(_model(write, "  - {name: b, block: mlp, repeat: 3, args: {hidden: 16}}"))
    assert [n.name for n in g.nodes] == [f"b.{i}.{part}" for i in range(3) for part in ("fc", "act")]
    assert "b.2.fc.weight" in g.weight_names()
    # each instance reads the previous one's output
    assert g.node("b.1.fc").inputs == ["b.0.act"]
    # the use's name refers to the last instance's output
    assert g.outputs == ["b"] and g.node("b.2.act").outputs == ["b"]


def test_without_repeat_there_is_no_index(write):
    g = load_model(_model(write, "  - {name: b, block: mlp, args: {hidden: 16}}"))
    assert g.node("b.fc").name == "b.fc"


def test_repeat_index_in_arguments_and_when(write):
    g = load_model(_model(write, "  - {name: b, block: mlp, repeat: 3, args: {hidden: '${8 * (i + 1)}', "
                                 "act: \"${'gelu' if i == 2 else 'relu'}\"}}"))
    assert [g.node(f"b.{i}.fc").attrs["out_features"] for i in range(3)] == [8, 16, 24]
    assert [g.node(f"b.{i}.act").op for i in range(3)] == ["relu", "relu", "gelu"]


def test_when_drops_entries(write):
    blocks = """
blocks:
  maybe:
    params: {extra: {type: bool, default: false}}
    graph:
      - {name: fc, op: linear, out_features: 16}
      - {name: act, op: relu, when: $extra}
      - {name: skip, op: add, inputs: [x, "${'act' if extra else 'fc'}"]}
"""
    g = load_model(_model(write, "  - {name: b, block: maybe, repeat: 2, args: {extra: '${i == 1}'}}",
                          blocks=blocks))
    assert [n.name for n in g.nodes] == ["b.0.fc", "b.0.skip", "b.1.fc", "b.1.act", "b.1.skip"]
    assert g.node("b.1.skip").inputs == ["b.0.skip", "b.1.act"]
    # a top-level 'when' with a literal
    g = load_model(_model(write, "  - {name: r, op: relu}\n  - {name: g, op: gelu, when: false}",
                          outputs="[r]", blocks=""))
    assert [n.op for n in g.nodes] == ["relu"]


def test_block_with_several_inputs_and_named_outputs(write):
    blocks = """
blocks:
  pair:
    inputs: [a, b]
    outputs: [sum, prod]
    graph:
      - {name: sum, op: add, inputs: [a, b]}
      - {name: prod, op: mul, inputs: [a, b]}
"""
    g = load_model(_model(write, "  - {name: y, op: relu}\n  - {name: p, block: pair, inputs: [x, y]}\n"
                                 "  - {name: out, op: sub, inputs: ['p:sum', 'p:prod']}",
                          outputs="[p, out]", blocks=blocks))
    # 'p' alone is the first output; as a model output it takes the name the spec uses
    assert g.outputs == ["p", "out"] and g.node("p.sum").outputs == ["p"]
    assert g.node("p.sum").inputs == ["x", "y"] and g.node("out").inputs == ["p", "p.prod"]


def test_repeat_threads_the_first_input_and_keeps_the_others(write):
    blocks = """
blocks:
  res:
    inputs: [h, skip]
    graph:
      - {name: add, op: add, inputs: [h, skip]}
"""
    g = load_model(_model(write, "  - {name: r, block: res, repeat: 3, inputs: [x, x]}", outputs="[r]",
                          blocks=blocks))
    assert [n.inputs for n in g.nodes] == [["x", "x"], ["r.0.add", "x"], ["r.1.add", "x"]]


def test_nested_blocks_prefix_names(write):
    blocks = MLP_BLOCK + """
  two:
    graph:
      - {name: first, block: mlp, args: {hidden: 16}}
      - {name: layers, block: mlp, repeat: 2, args: {hidden: 16}}
"""
    g = load_model(_model(write, "  - {name: b, block: two}", blocks=blocks))
    assert [n.name for n in g.nodes][:4] == ["b.first.fc", "b.first.act", "b.layers.0.fc", "b.layers.0.act"]


def test_include_nested_block_files(write):
    write("lib/outer.yaml", """
        include: [inner/mlp.yaml]
        blocks:
          head:
            params: {n: {type: int}}
            graph:
              - {name: body, block: mlp, args: {hidden: $n}}
              - {name: out, op: softmax}
        """, kind="Blocks")
    write("lib/inner/mlp.yaml", MLP_BLOCK, kind="Blocks")
    path = _model(write, "  - {name: b, block: head, args: {n: 10}}", blocks="", extra="include: [lib/outer.yaml]")
    g = load_model(path)
    assert [n.name for n in g.nodes] == ["b.body.fc", "b.body.act", "b.out"]
    library = load_blocks(path.replace("m.yaml", "lib/outer.yaml"))
    assert sorted(library.blocks) == ["head", "mlp"]


def test_include_as_a_single_string(write):
    write("mlp.yaml", MLP_BLOCK, kind="Blocks")
    g = load_model(_model(write, "  - {name: b, block: mlp, args: {hidden: 2}}", blocks="", extra="include: mlp.yaml"))
    assert g.node("b.fc").attrs["out_features"] == 2


def test_a_block_error_names_the_use_site(write):
    path = _model(write, "  - {name: b, block: mlp, repeat: 2, args: {hidden: 8, act: rleu}}")
    with pytest.raises(SpecError) as info:
        load_model(path)
    text = str(info.value)
    assert "unknown op 'rleu' (did you mean 'relu'?)" in text
    assert "note: in block 'mlp' used as 'b.0'" in text


def test_repeat_with_a_templated_name_names_each_instance(write):
    g = load_model(_model(write, "  - {name: 'layer_${i}', block: mlp, repeat: 3, args: {hidden: 16}}\n"
                                 "  - {name: out, op: add, inputs: [layer_1, layer_2]}",
                          outputs="[out]"))
    assert [n.name for n in g.nodes[:6]] == [f"layer_{i}.{part}" for i in range(3)
                                             for part in ("fc", "act")]
    assert "layer_2.fc.weight" in g.weight_names() and "layer_2.0.fc.weight" not in g.weight_names()
    assert g.node("layer_1.fc").inputs == ["layer_0.act"]  # still chained
    assert g.node("out").inputs == ["layer_1.act", "layer_2.act"]  # each name is its output


def test_repeat_with_a_name_that_does_not_change_per_instance_is_an_error(write):
    with pytest.raises(SpecError, match="instances 0 and 1 are both named 'same'"):
        load_model(_model(write, "  - {name: \"${'same'}\", block: mlp, repeat: 2, args: {hidden: 16}}",
                          outputs="[same]"))


def test_include_fan_out_reads_each_file_once(tmp_path, monkeypatch):
    """Ten block files, each including every later one three times: 3^45 include paths, but each
    file is read once (it used to be read again on every path: minutes)."""
    import time
    from ait_build.spec import blocks
    count = 10
    for i in range(count):
        later = [f"f{j}.yaml" for j in range(i + 1, count)] * 3
        (tmp_path / f"f{i}.yaml").write_text(
            f"apiVersion: ait-build/v1\nkind: Blocks\ninclude: {later}\n"
            f"blocks:\n  b{i}:\n    graph: [{{op: relu}}]\n")
    (tmp_path / "m.yaml").write_text(
        "apiVersion: ait-build/v1\nkind: Model\nname: m\ninputs: {x: {shape: [4]}}\n"
        "include: [f0.yaml, f0.yaml]\ngraph: [{name: a, block: b9}]\noutputs: [a]\n")
    reads = []
    real = blocks._read_blocks_file
    monkeypatch.setattr(blocks, "_read_blocks_file", lambda path: reads.append(path) or real(path))
    start = time.perf_counter()
    assert [n.name for n in load_model(str(tmp_path / "m.yaml")).nodes] == ["a.relu"]
    assert time.perf_counter() - start < 2.0
    assert sorted(os.path.basename(p) for p in reads) == sorted(f"f{i}.yaml" for i in range(count))
