"""embedding (a weight table), gather (ONNX Gather / np.take) and parameter (a stored tensor)."""

import numpy as np
import pytest

from ait_build.errors import AitError
from ait_build.ops.reference import run_reference

from .helpers import build, out_types, rand, run1, spec_error, weights_of

F32 = np.float32
TABLE = np.arange(12, dtype=F32).reshape(4, 3)  # row i = [3i, 3i+1, 3i+2]


def ids(*rows, dtype=np.int64):
    return np.array(rows, dtype)


def test_embedding_rows(tmp_path):
    out = run1(tmp_path, "embedding", {"i": ids([0, 2], [3, 3])}, weights={"weight": TABLE},
               num_embeddings=4, embedding_dim=3)
    np.testing.assert_array_equal(out, [[[0, 1, 2], [6, 7, 8]], [[9, 10, 11], [9, 10, 11]]])
    assert weights_of(tmp_path, "embedding", {"i": ([2], "int32")}, num_embeddings=4,
                      embedding_dim=3) == {"weight": ("n.weight", [4, 3])}


def test_embedding_output_takes_the_model_dtype(tmp_path):
    got = out_types(tmp_path, "embedding", {"i": (["batch", 7], "int32")}, model_dims={"batch": 2},
                    num_embeddings=4, embedding_dim=3)
    assert got == [(["batch", 7, 3], "float32")]


@pytest.mark.parametrize("index", [4, -1])
def test_embedding_index_out_of_range_is_reported(tmp_path, index):
    # PyTorch's embedding rejects negative indices as well
    with pytest.raises(AitError, match=r"index out of range \[0, 4\)"):
        run1(tmp_path, "embedding", {"i": ids([0, index])}, num_embeddings=4, embedding_dim=3)


def test_gather(tmp_path):
    got = run1(tmp_path, "gather", {"d": TABLE, "i": ids(2, 0)}, axis=1)
    np.testing.assert_array_equal(got, TABLE[:, [2, 0]])
    # indices of any rank replace the axis: [4, 3] along 0 with [2, 2] -> [2, 2, 3]
    got = run1(tmp_path, "gather", {"d": TABLE, "i": ids([1, 1], [-1, 0], dtype=np.int32)})
    np.testing.assert_array_equal(got, TABLE[[[1, 1], [3, 0]]])
    with pytest.raises(AitError, match=r"index out of range \[-3, 3\)"):
        run1(tmp_path, "gather", {"d": TABLE, "i": ids(3)}, axis=1)


def test_parameter_is_stored_under_the_given_name(tmp_path):
    graph = build(tmp_path, "parameter", {}, shape=[1, 1, 3], weights={"value": "cls_token"})
    assert graph.nodes[0].weights == {"value": "cls_token"}
    value = np.array([[[1, 2, 3]]], F32)
    graph.weights.set("cls_token", value)
    (out,) = run_reference(graph, {"unused": np.zeros(1, F32)}).values()
    np.testing.assert_array_equal(out, value)


def test_parameter_weight_defaults_to_the_node_name(tmp_path):
    """Its output then needs a name of its own (the weight holds the node's: d61c7a9)."""
    graph = build(tmp_path, "parameter", {}, shape=[2, 3], outputs=["n_out"])
    (node,) = graph.nodes
    assert node.weights == {"value": "n"}
    assert [d.value for d in graph.tensors[node.outputs[0]].shape] == [2, 3]


@pytest.mark.parametrize("init, check", [("zeros", lambda a: (a == 0).all()),
                                         ("normal", lambda a: a.std() > 0.1)])
def test_parameter_random_init(tmp_path, init, check):
    graph = build(tmp_path, "parameter", {}, shape=[64], init=init, weights={"value": "p"})
    (out,) = run_reference(graph, {"unused": np.zeros(1, F32)}).values()
    assert out.shape == (64,) and check(out)


# -- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, inputs, attrs, match", [
    ("embedding", {"i": [2]}, {"num_embeddings": 4, "embedding_dim": 3},
     "embedding indices must be int32 or int64, got float32"),
    ("embedding", {"i": ([2], "int32")}, {"num_embeddings": 0, "embedding_dim": 3},
     "'num_embeddings' must be >= 1"),
    ("embedding", {"i": ([2], "int32")}, {"num_embeddings": 4, "embedding_dim": -1},
     "'embedding_dim' must be >= 1"),
    ("gather", {"d": [4, 3], "i": ([2], "bool")}, {}, "gather indices must be int32 or int64"),
    ("gather", {"d": [4, 3], "i": ([2], "int32")}, {"axis": 2}, "axis 2 is out of range"),
    ("parameter", {}, {"shape": ["batch"], "weights": {"value": "p"}}, "must be static"),
    ("parameter", {}, {"shape": [-1, 2], "weights": {"value": "p"}}, "static sizes >= 1"),
    ("parameter", {}, {"shape": [2], "init": "uniform"}, "must be one of normal, zeros"),
])
def test_errors(tmp_path, op, inputs, attrs, match):
    spec_error(tmp_path, op, inputs, match, model_dims={"batch": 4}, **attrs)


# -- against PyTorch ----------------------------------------------------------------------------

@pytest.mark.torch
def test_embedding_and_gather_vs_torch(tmp_path):
    torch = pytest.importorskip("torch")
    table = rand(50, 8)
    idx = np.random.default_rng(1).integers(0, 50, (3, 7))
    out = run1(tmp_path, "embedding", {"i": idx}, weights={"weight": table},
               num_embeddings=50, embedding_dim=8)
    ref = torch.nn.functional.embedding(torch.from_numpy(idx), torch.from_numpy(table))
    np.testing.assert_array_equal(out, ref.numpy())  # a copy: exact
    data = rand(4, 50, 6)
    out = run1(tmp_path, "gather", {"d": data, "i": idx}, axis=1)
    ref = torch.index_select(torch.from_numpy(data), 1, torch.from_numpy(idx.ravel()))
    np.testing.assert_array_equal(out, ref.numpy().reshape(4, 3, 7, 6))


def test_gather_elements_is_torch_gather(tmp_path):
    torch = pytest.importorskip("torch")
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[[2, 0], [1, 1], [-1, 3]], [[0, 0], [3, -4], [2, 1]]], np.int64)
    got = run1(tmp_path, "gather_elements", {"data": data, "idx": idx}, axis=2)
    want = torch.gather(torch.from_numpy(data), 2, torch.from_numpy(idx % 4)).numpy()
    np.testing.assert_array_equal(got, want)
    mid = np.array([[[0, 2, 1, 0]], [[1, 1, 2, 0]]], np.int32)
    np.testing.assert_array_equal(
        run1(tmp_path, "gather_elements", {"data": data, "idx": mid}, axis=1),
        torch.gather(torch.from_numpy(data), 1, torch.from_numpy(mid).long()).numpy())
    spec_error(tmp_path, "gather_elements", {"data": [2, 3, 4], "idx": ([2, 2, 2], "int64")},
               "slice data first", axis=2)


def test_permute_elements_is_scatter_of_a_permutation(tmp_path):
    torch = pytest.importorskip("torch")
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    order = np.argsort(np.random.default_rng(1).random((2, 3, 4)), axis=2)
    got = run1(tmp_path, "permute_elements", {"src": data, "idx": order}, axis=2)
    want = torch.empty_like(torch.from_numpy(data)).scatter_(
        2, torch.from_numpy(order), torch.from_numpy(data)).numpy()
    np.testing.assert_array_equal(got, want)
    # the inverse of gather_elements by the same index; negative places count from the end
    picked = np.take_along_axis(data, order, 2)
    np.testing.assert_array_equal(
        run1(tmp_path, "permute_elements", {"src": picked, "idx": order - 4}, axis=-1), data)
    # along the middle axis: each (image, column) its own rotation of 0, 1, 2
    mid = np.stack([np.roll(np.arange(3), s) for s in range(8)]).reshape(2, 4, 3).transpose(0, 2, 1)
    np.testing.assert_array_equal(
        run1(tmp_path, "permute_elements", {"src": data, "idx": mid.astype(np.int32)}, axis=1),
        torch.empty_like(torch.from_numpy(data)).scatter_(
            1, torch.from_numpy(mid.astype(np.int64)), torch.from_numpy(data)).numpy())


def test_permute_elements_refuses_what_is_no_permutation(tmp_path):
    data = np.arange(4, dtype=np.float32)
    with pytest.raises(AitError, match="not a permutation"):
        run1(tmp_path, "permute_elements", {"src": data, "idx": np.array([0, 1, 1, 3])})
    spec_error(tmp_path, "permute_elements", {"src": [2, 4], "idx": ([2, 3], "int64")},
               "must have the shape of src")
    spec_error(tmp_path, "permute_elements", {"src": [2, 4], "idx": ([2, 4], "float32")},
               "int32 or int64")
