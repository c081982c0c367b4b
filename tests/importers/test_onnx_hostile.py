"""ONNX files a careful user or a hostile repository hands `ait-build import onnx`: graphs ONNX
Runtime and the ONNX checker refuse are refused (not imported with one writer kept), malformed
initializers are errors (not NumPy crashes), and every error names the ONNX file and the tensor
or node, never a temporary spec file that no longer exists. Names a spec could not hold as they
are (`0`, `true`, tf2onnx's `input_1:0`, 300 characters) import."""

from __future__ import annotations

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from ait_build.cli.main import main  # noqa: E402
from ait_build.spec.model import load_model  # noqa: E402

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
W = numpy_helper.from_array(np.ones((4, 3), np.float32), "W")


def _tensor(dims: list, **data) -> onnx.TensorProto:
    t = onnx.TensorProto(name="W", data_type=TensorProto.FLOAT, dims=dims)
    for field, value in data.items():
        setattr(t, field, value) if field == "raw_data" else getattr(t, field).extend(value)
    return t


def _relu(src: str = "x", dst: str = "y"):
    return helper.make_node("Relu", [src], [dst])


def _vi(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


BROKEN = {
    "two writers": ([_relu(), helper.make_node("Sigmoid", ["x"], ["y"])], [X], [Y], [],
                    "tensor 'y' is written by node 0 'Relu' (Relu) and written by node 1"),
    "input twice": ([_relu()], [X, _vi("x", [2, 4])], [Y], [], "lists input 'x' twice"),
    "initializer written": ([_relu("x", "W")], [X], [_vi("W", None)], [W],
                            "tensor 'W' is initializer 'W' and written by node 0"),
    "no outputs": ([_relu()], [X], [], [], "the graph has no outputs"),
    "undefined input": ([_relu("nothere")], [X], [Y], [], "reads tensor 'nothere', which no"),
    "output never written": ([_relu()], [X], [_vi("zz", None)], [], "output 'zz' is written by no"),
    "dims past the data": ([helper.make_node("MatMul", ["x", "W"], ["y"])], [X], [Y],
                           [_tensor([1 << 31, 1 << 31], raw_data=b"\0" * 64)],
                           "initializer 'W' has dims [2147483648, 2147483648] "
                           "(4611686018427387904 elements) but 64 bytes of data"),
    "dims without data": ([helper.make_node("MatMul", ["x", "W"], ["y"])], [X], [Y],
                          [_tensor([4, 3])], "initializer 'W' has dims [4, 3] (12 elements) but 0"),
    "input of 2^41": ([_relu()], [_vi("x", [1 << 21, 1 << 20])], [Y], [],
                      "input 'x' would hold 2199023255552 elements at the largest dims; the limit "
                      "is 1099511627776 (2^40) (in the spec's line `x: {shape: [2097152, "),
}


def _save(tmp_path, name: str, nodes, inputs, outputs, inits=()) -> str:
    path = str(tmp_path / f"{name.replace(' ', '_')}.onnx")
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _import(path: str, out: str, capsys) -> tuple:
    """(exit status, stderr without the import's progress lines)."""
    capsys.readouterr()
    rc = main(["import", "onnx", path, "-o", out])
    err = capsys.readouterr().err
    return rc, "".join(line for line in err.splitlines(keepends=True)
                       if not line.startswith("import: "))


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_graph_is_an_error_about_the_onnx_file(tmp_path, capsys, case):
    nodes, inputs, outputs, inits, words = BROKEN[case]
    path = _save(tmp_path, case, nodes, inputs, outputs, inits)
    rc, err = _import(path, str(tmp_path / "out" / "m.yaml"), capsys)
    assert rc == 1, err
    assert err.startswith(f"error: {path}: ") and words in err, err
    assert ".part" not in err and len(err.strip().splitlines()) == 1, err
    assert not os.listdir(tmp_path / "out")


def test_an_empty_file_holds_no_graph(tmp_path, capsys):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    rc, err = _import(str(path), str(tmp_path / "m.yaml"), capsys)
    assert rc == 1 and err.strip() == f"error: {path}: holds no ONNX graph (an empty or cut-short file?)"


@pytest.mark.parametrize("name, spec_name", [
    ("0", "0"), ("true", "true"), ("input_1:0", "input_1_0"), ("n" * 300, None),
])
def test_names_a_spec_could_not_hold_as_they_are_import(tmp_path, capsys, name, spec_name):
    """Quoted in the spec where YAML would read another type; named as weights are where the
    spec's name rules refuse them (a long name keeps its start and a hash of the whole)."""
    path = _save(tmp_path, "names", [_relu(name, "y")], [_vi(name, [2, 4])], [Y])
    rc, err = _import(path, str(tmp_path / "m.yaml"), capsys)
    assert rc == 0, err
    graph = load_model(str(tmp_path / "m.yaml"))
    (got,) = graph.inputs
    assert got == spec_name if spec_name else (got.startswith("n" * 150) and len(got) <= 200)


@pytest.mark.parametrize("op, inputs", [
    ("ConstantOfShape", [np.array([1 << 20, 1 << 20], np.int64)]),
    ("Expand", [np.ones(3, np.float32), np.array([1 << 20, 1 << 20, 3], np.int64)]),
    ("Range", [np.array(0, np.int64), np.array(1 << 40, np.int64), np.array(1, np.int64)]),
])
def test_a_constant_too_large_for_a_weight_is_refused_before_it_is_computed(tmp_path, capsys, op,
                                                                             inputs):
    """Folded at import time, these would allocate and fill terabytes (an out-of-memory kill or
    a machine swapping for minutes); shape inference sizes them first."""
    names = [f"c{i}" for i in range(len(inputs))]
    inits = [numpy_helper.from_array(a, n) for a, n in zip(inputs, names)]
    nodes = [helper.make_node(op, names, ["big"]), helper.make_node("Add", ["x", "big"], ["y"])]
    path = _save(tmp_path, op, nodes, [X], [Y], inits)
    rc, err = _import(path, str(tmp_path / "m.yaml"), capsys)
    assert rc == 1 and f"node 0 'big' ({op}): folding a constant {op}: its result would hold" in err
    assert "a weight may hold 2^32" in err


def test_a_reshape_written_for_one_size_of_a_dynamic_dim_says_which(tmp_path, capsys):
    """TorchScript's exporter declares the inputs dynamic but writes the example's sizes into
    reshapes (nn.MultiheadAttention's k.view(s, b * h, d)): the error gives the size and the
    --input that imports the file at it, which then imports."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])
    consts = [numpy_helper.from_array(np.array(v, np.int64), n)
              for n, v in (("zero", [0]), ("fours", [4, 4]))]
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["b"], axis=0),
             helper.make_node("Concat", ["b", "fours"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    path = _save(tmp_path, "fixed", nodes, [x], [_vi("y", None)], consts)
    rc, err = _import(path, str(tmp_path / "m.yaml"), capsys)
    assert rc == 1, err
    assert "a reshape of [batch, seq, 8] into [batch, 4, 4] holds 'seq' at 2" in err, err
    assert err.rstrip().endswith("--input x:batch,2,8"), err
    assert main(["import", "onnx", path, "-o", str(tmp_path / "m.yaml"),
                 "--input", "x:batch,2,8"]) == 0
    graph = load_model(str(tmp_path / "m.yaml"))
    assert [tuple(graph.tensors[t].shape[1:]) for t in graph.outputs] == [(4, 4)]


def test_a_size_expression_in_input_is_for_torch_only(tmp_path, capsys):
    """`--input x:batch,320*frames+80` is torch.export's derived dim; an ONNX file's sizes are
    its own: refused in one line."""
    path = _save(tmp_path, "audio", [_relu()], [_vi("x", ["batch", "samples"])], [_vi("y", None)])
    capsys.readouterr()
    assert main(["import", "onnx", path, "-o", str(tmp_path / "m.yaml"),
                 "--input", "x:batch,320*frames+80"]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("import: ")]
    assert len(err) == 1 and err[0].endswith("audio.onnx: --input x: a size expression "
                                             "(320*frames + 80) is taken by `import torch` only"), err


@pytest.mark.parametrize("node, inits, words", [
    (helper.make_node("Transpose", ["x"], ["y"], perm=[0, 0]), [], "a permutation of 2 axes, got [0, 0]"),
    (helper.make_node("Concat", ["x", "x"], ["y"], axis=7), [], "axis 7 is out of range for a rank-2 tensor"),
    (helper.make_node("Softmax", ["x"], ["y"], axis=-9), [], "axis -9 is out of range for a rank-2 tensor"),
    (helper.make_node("Reshape", ["x", "s"], ["y"]),
     [numpy_helper.from_array(np.array([0, 0, 0], np.int64), "s")],
     "the 0 at 2 copies an axis a tensor of rank 2 does not have"),
])
def test_axes_outside_the_rank_are_errors_not_wrapped(tmp_path, capsys, node, inits, words):
    """ONNX Runtime refuses these; the importer took them modulo the rank (another axis, another
    model) or failed with an IndexError."""
    path = _save(tmp_path, node.op_type, [node], [X], [Y], inits)
    rc, err = _import(path, str(tmp_path / "m.yaml"), capsys)
    assert rc == 1 and words in err, err


def test_a_position_table_shorter_than_the_default_range_says_to_narrow_it(tmp_path, capsys):
    """An exported transformer slices its position table (40 rows) to the sequence: with no
    --dim, seq's default range reaches 64, past the table; the one-line error names the slice
    and the flag, and the file imports with the range narrowed."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])
    consts = [numpy_helper.from_array(np.ones((40, 4), np.float32), "positions")] + [
        numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("one", [1]), ("zero", [0]))]
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["seq"], axis=0),
             helper.make_node("Slice", ["positions", "zero", "seq", "zero"], ["used"]),
             helper.make_node("Add", ["x", "used"], ["y"])]
    path = _save(tmp_path, "positions", nodes, [x], [_vi("y", None)], consts)
    rc, err = _import(path, str(tmp_path / "m.yaml"), capsys)
    assert rc == 1 and len(err.strip().splitlines()) == 1, err
    assert "ends past the dim's last element at seq=64" in err, err
    assert "narrow it with the import's `--dim NAME=MIN:MAX` (a dim without one is 1:64)" in err
    assert main(["import", "onnx", path, "-o", str(tmp_path / "m.yaml"),
                 "--dim", "seq=1:40"]) == 0
