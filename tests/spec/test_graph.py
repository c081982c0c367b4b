"""Model graphs: implicit chaining, node names, multi-output ops, weight naming and overrides,
output renaming, dims and dtypes."""

from __future__ import annotations

import numpy as np
import pytest

from ait_build.errors import SpecError
from ait_build.ir.dims import Dim, DimRange
from ait_build.spec.model import load_model
from ait_build.ir.weights import save_safetensors


def _model(write, graph, outputs, inputs="  x: {shape: [batch, 16]}", extra="", name="m.yaml"):
    return write(name, "name: m\ndims:\n  batch: {min: 2, max: 32, opt: 8}\n  seq: {max: 128}\n"
                 f"inputs:\n{inputs}\n{extra}\ngraph:\n{graph}\noutputs: {outputs}\n")


def test_implicit_chaining_and_default_names(write):
    g = load_model(_model(write, "  - {op: linear, out_features: 8}\n  - {op: relu}\n  - {op: relu}",
                          "[relu_1]"))
    assert [(n.name, n.op, n.inputs) for n in g.nodes] == [
        ("linear", "linear", ["x"]), ("relu", "relu", ["linear"]), ("relu_1", "relu", ["relu"])]


def test_chaining_starts_from_the_first_input(write):
    g = load_model(_model(write, "  - {op: relu}\n  - {name: s, op: add, inputs: [relu, y]}", "[s]",
                          inputs="  x: {shape: [batch, 16]}\n  y: {shape: [batch, 16]}"))
    assert g.node("relu").inputs == ["x"] and g.inputs == ["x", "y"]


def test_inputs_may_be_a_single_name(write):
    g = load_model(_model(write, "  - {name: a, op: relu}\n  - {name: b, op: gelu, inputs: x}", "[a, b]"))
    assert g.node("b").inputs == ["x"]


def test_multi_output_nodes_by_index(write):
    g = load_model(_model(write, "  - {name: parts, op: split, sections: 2}\n"
                                 "  - {name: s, op: add, inputs: ['parts:1', 'parts:0']}", "[s]"))
    split = g.node("parts")
    assert split.outputs == ["parts:0", "parts:1"]
    assert [str(d) for d in g.tensors["parts:0"].shape] == ["batch", "8"]
    assert g.node("s").inputs == ["parts:1", "parts:0"]


def test_multi_output_nodes_with_named_outputs(write):
    g = load_model(_model(write, "  - {name: qk, op: split, sections: 2, outputs: [q, k]}\n"
                                 "  - {name: s, op: mul, inputs: [q, k]}", "[s, k]"))
    assert g.node("qk").outputs == ["q", "k"]
    assert g.node("s").inputs == ["q", "k"] and g.outputs == ["s", "k"]


def test_expressions_in_inputs(write):
    blocks = """
blocks:
  pick:
    params: {use_skip: false}
    graph:
      - {name: r, op: relu}
      - {name: out, op: add, inputs: [r, "${'x' if use_skip else 'r'}"]}
"""
    path = _model(write, "  - {name: b, block: pick, args: {use_skip: true}}", "[b]", name="m2.yaml")
    with open(path, "a") as fh:
        fh.write(blocks)
    g = load_model(path)
    assert g.node("b.out").inputs == ["b.r", "x"]


def test_weight_names_follow_state_dict_names(write):
    g = load_model(_model(write, "  - {name: encoder.fc1, op: linear, out_features: 8}\n"
                                 "  - {name: norm, op: layer_norm}", "[norm]"))
    assert g.weight_names() == ["encoder.fc1.bias", "encoder.fc1.weight", "norm.bias", "norm.weight"]
    assert [d.value for d in g.tensors["encoder.fc1.weight"].shape] == [8, 16]  # [out, in] like nn.Linear


def test_weight_overrides_share_a_tensor(write):
    g = load_model(_model(write, "  - {name: a, op: linear, out_features: 16, weights: {weight: tied}}\n"
                                 "  - {name: b, op: linear, out_features: 16, weights: {weight: tied}}", "[b]"))
    assert g.node("a").weights["weight"] == g.node("b").weights["weight"] == "tied"
    assert g.weight_names() == ["a.bias", "b.bias", "tied"]


def test_parameter_op_names_its_weight(write):
    g = load_model(_model(write, "  - {name: cls_token, op: parameter, shape: [1, 16]}\n"
                                 "  - {name: pos, op: parameter, shape: [4, 16], weights: {value: pos_embed}}\n"
                                 "  - {name: s, op: add, inputs: [x, cls_token]}", "[s, pos]"))
    assert "cls_token" in g.weight_names() and "pos_embed" in g.weight_names()
    # the node's output cannot share its weight's name, but the spec still calls it cls_token
    assert g.node("s").inputs == ["x", "cls_token:0"] and g.node("cls_token").weights == {"value": "cls_token"}


def test_outputs_are_renamed_to_the_name_the_spec_uses(write):
    g = load_model(_model(write, "  - {name: parts, op: split, sections: 2}", "['parts:1']"))
    assert g.outputs == ["parts:1"]
    blocks = "blocks:\n  b:\n    graph:\n      - {name: fc, op: linear, out_features: 4}\n"
    path = _model(write, "  - {name: head, block: b}", "[head]", extra=blocks)
    g = load_model(path)
    assert g.outputs == ["head"] and g.node("head.fc").outputs == ["head"]


def test_dims_have_ranges_and_defaults(write):
    g = load_model(_model(write, "  - {op: relu}", "[relu]", inputs="  x: {shape: [batch, seq, 16]}"))
    assert g.dims["batch"] == DimRange("batch", 2, 32, 8)
    assert g.dims["seq"] == DimRange("seq", 1, 128, 128)  # min 1, opt = max by default
    assert g.tensors["x"].shape == (Dim.of("batch"), Dim.of("seq"), Dim.of(16))


def test_an_input_size_may_be_an_expression_of_dims(write):
    """An audio length a feature encoder's strides divide (`320*seq + 80`): the reference binds
    the dim from the input's size and refuses a size the expression never takes."""
    from ait_build.ops.reference import run_reference
    g = load_model(_model(write, "  - {op: relu}", "[relu]",
                          inputs="  x: {shape: [batch, 320*seq + 80]}"))
    assert g.tensors["x"].shape == (Dim.of("batch"), Dim.of("seq") * 320 + 80)
    x = np.ones((2, 720), np.float32)
    assert run_reference(g, {"x": x})["relu"].shape == (2, 720)
    with pytest.raises(Exception, match=r"input 'x' dim 1 is 721, which is not 320\*seq \+ 80"):
        run_reference(g, {"x": np.ones((2, 721), np.float32)})
    for size, match in (("320*frames + 80", "unknown dim 'frames' in '320\\*frames \\+ 80'"),
                        ("seq // 2", "is not a dim expression"),
                        ("2*seq - 1", "no negative coefficient")):
        with pytest.raises(SpecError, match=match):
            load_model(_model(write, "  - {op: relu}", "[relu]",
                              inputs=f"  x: {{shape: [batch, '{size}']}}"))


def test_symbolic_dims_flow_through_reshape(write):
    g = load_model(_model(write, "  - {name: r, op: reshape, shape: [batch, seq, 4, 4]}", "[r]",
                          inputs="  x: {shape: [batch, seq, 16]}"))
    assert [str(d) for d in g.tensors["r"].shape] == ["batch", "seq", "4", "4"]


def test_dtypes_of_model_and_inputs(write):
    path = write("m.yaml", "name: m\ndtype: float16\ninputs:\n  ids: {shape: [2, 8], dtype: int64}\n"
                           "graph:\n  - {name: emb, op: embedding, num_embeddings: 10, embedding_dim: 4}\n"
                           "outputs: [emb]\n")
    g = load_model(path)
    assert g.dtype == "float16" and g.tensors["ids"].dtype == "int64"
    assert g.tensors["emb"].dtype == "float16" and g.tensors["emb.weight"].dtype == "float16"


def test_weights_from_a_safetensors_file_next_to_the_spec(write, tmp_path):
    save_safetensors({"fc.weight": np.ones((4, 16), np.float32), "fc.bias": np.zeros(4, np.float32)},
                     str(tmp_path / "w" / "m.safetensors"))
    path = _model(write, "  - {name: fc, op: linear, out_features: 4}", "[fc]", extra="weights: w/m.safetensors")
    g = load_model(path)
    assert g.weights.get("fc.weight").shape == (4, 16)


def test_weights_argument_replaces_the_spec_field(write, tmp_path):
    save_safetensors({"fc.weight": np.ones((4, 16), np.float32), "fc.bias": np.zeros(4, np.float32)},
                     str(tmp_path / "other.safetensors"))
    path = _model(write, "  - {name: fc, op: linear, out_features: 4}", "[fc]", extra="weights: {random: {seed: 3}}")
    g = load_model(path, weights=str(tmp_path / "other.safetensors"))
    assert float(g.weights.get("fc.weight").sum()) == 64.0
    with pytest.raises(SpecError, match="not found"):
        load_model(path, weights=str(tmp_path / "missing.safetensors"))


def test_a_file_of_some_weights_beside_random_ones(write, tmp_path):
    """`{random: {seed}, file}`: what the file holds comes from it (checked), the rest is drawn;
    `{file}` alone is the file, every weight in it."""
    save_safetensors({"fc.bias": np.arange(4, dtype=np.float32)}, str(tmp_path / "some.safetensors"))
    graph = "  - {name: fc, op: linear, out_features: 4}"
    g = load_model(_model(write, graph, "[fc]",
                          extra="weights: {random: {seed: 3}, file: some.safetensors}"))
    assert g.weights.get("fc.bias").tolist() == [0, 1, 2, 3]
    drawn = load_model(_model(write, graph, "[fc]", extra="weights: {random: {seed: 3}}",
                              name="r.yaml")).weights.get("fc.weight")
    assert np.array_equal(g.weights.get("fc.weight"), drawn)
    with pytest.raises(SpecError, match="missing tensor 'fc.weight'"):
        load_model(_model(write, graph, "[fc]", extra="weights: {file: some.safetensors}"))
    save_safetensors({"fc.bias": np.zeros(5, np.float32)}, str(tmp_path / "some.safetensors"))
    with pytest.raises(SpecError, match="'fc.bias' has shape"):
        load_model(_model(write, graph, "[fc]",
                          extra="weights: {random: {seed: 3}, file: some.safetensors}"))


def test_a_bfloat16_checkpoint_for_a_float32_spec(write, tmp_path):
    """Float weights may be stored in any float dtype; a BF16 one was 'data type bfloat16 not
    understood' (NumPy knows it once ml_dtypes is imported): in a fresh process, where nothing
    imported it yet."""
    import subprocess
    import sys
    import ml_dtypes
    from safetensors.numpy import save_file
    save_file({"fc.weight": np.full((4, 16), 0.5, ml_dtypes.bfloat16),
               "fc.bias": np.ones(4, ml_dtypes.bfloat16)}, str(tmp_path / "bf16.safetensors"))
    path = _model(write, "  - {name: fc, op: linear, out_features: 4}", "[fc]",
                  extra="weights: bf16.safetensors")
    script = ("import sys; from ait_build.spec.model import load_model; w = load_model(sys.argv[1])"
              ".weights; print(w.get('fc.weight').dtype, w.get('fc.weight').sum(), "
              "w.get('fc.bias').sum())")
    proc = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["float32", "32.0", "4.0"]


def test_random_weights_are_seeded(write):
    path = _model(write, "  - {name: fc, op: linear, out_features: 4}", "[fc]", extra="weights: {random: {seed: 3}}")
    a, b = load_model(path).weights.get("fc.weight"), load_model(path).weights.get("fc.weight")
    assert np.array_equal(a, b) and a.std() > 0


def test_a_rooted_weight_name_skips_the_block_prefix(write):
    """ViT's pos_embedding read inside a block, and a table tied across blocks: '/NAME'."""
    blocks = ("blocks:\n  b:\n    graph:\n"
              "      - {name: pos, op: parameter, shape: [16], weights: {value: /pos_embedding}}\n"
              "      - {name: add, op: add, inputs: [x, pos]}\n"
              "      - {name: fc, op: linear, out_features: 16, weights: {weight: /shared.weight}}\n")
    g = load_model(_model(write, "  - {name: layers, block: b, repeat: 2}", "[layers]",
                          extra=blocks))
    assert {"pos_embedding", "shared.weight", "layers.0.fc.bias", "layers.1.fc.bias"} <= \
        set(g.weight_names())
    assert g.node("layers.1.pos").weights == {"value": "pos_embedding"}
    assert not any(w.startswith("layers.0.pos") or w.endswith(".shared.weight")
                   for w in g.weight_names())


def test_a_tensor_inside_a_block_can_be_an_output(write):
    blocks = "blocks:\n  b:\n    graph:\n      - {name: fc, op: linear, out_features: 4}\n" \
             "      - {name: act, op: relu}\n"
    g = load_model(_model(write, "  - {name: layers, block: b, repeat: 3}", "[layers, layers.1.fc]",
                          extra=blocks))
    assert g.outputs == ["layers", "layers.1.fc"]
    inputs = {"x": np.ones((2, 16), np.float32)}
    from ait_build.ops.reference import run_reference
    out = run_reference(g, inputs)
    everything = run_reference(g, inputs, keep_all=True)
    np.testing.assert_array_equal(out["layers.1.fc"], everything["layers.1.fc"])
    with pytest.raises(SpecError, match="undefined tensor 'layers.7.fc'"):
        load_model(_model(write, "  - {name: layers, block: b, repeat: 3}", "[layers.7.fc]",
                          extra=blocks, name="bad.yaml"))
