"""linear, matmul and bmm, with their epilogue act(alpha * acc + bias + residual); grouped_matmul."""

import numpy as np
import pytest

from .helpers import out_types, rand, run1, spec_error, weights_of

F32 = np.float32
# GEMMs below sum K <= 32 products of unit normals in float32; BLAS and torch order the sums
# differently, which moves results by a few ulps of the largest partial sum: 1e-5 covers that
GEMM_TOL = dict(rtol=1e-5, atol=1e-5)


def m(*rows):
    return np.array(rows, F32)


def test_linear_values_and_weight_layout(tmp_path):
    w, b = m([1, 2], [3, 4], [5, 6]), m(1, 1, 1)  # nn.Linear(2, 3): weight [out, in]
    out = run1(tmp_path, "linear", {"x": m([1, 2])}, weights={"weight": w, "bias": b},
               out_features=3)
    np.testing.assert_array_equal(out, [[1 + 4 + 1, 3 + 8 + 1, 5 + 12 + 1]])
    assert weights_of(tmp_path, "linear", {"x": [4, 2]}, out_features=3) == {
        "weight": ("n.weight", [3, 2]), "bias": ("n.bias", [3])}
    assert weights_of(tmp_path, "linear", {"x": [4, 2]}, out_features=3, bias=False) == {
        "weight": ("n.weight", [3, 2])}


def test_linear_epilogue_order(tmp_path):
    w, b = m([1.0]), m(-3.0)
    # relu(2 - 3 + r): r = 0.5 gives 0 (relu(2 - 3) + 0.5 would be 0.5); r = 1.5 gives 0.5
    for r, expected in [(0.5, 0.0), (1.5, 0.5)]:
        out = run1(tmp_path, "linear", {"x": m([2.0]), "r": m([r])},
                   weights={"weight": w, "bias": b}, out_features=1, activation="relu")
        assert out.item() == expected


def test_linear_keeps_leading_dims(tmp_path):
    got = out_types(tmp_path, "linear", {"x": ["batch", "seq", 8]}, model_dims={"batch": 4, "seq": 16},
                    out_features=3)
    assert got == [(["batch", "seq", 3], "float32")]


def test_matmul_transpose_b_alpha_residual(tmp_path):
    a, b = m([1, 2]), m([3, 4], [5, 6])
    # a @ b.T = [11, 17]
    np.testing.assert_array_equal(run1(tmp_path, "matmul", {"a": a, "b": b}, transpose_b=True),
                                  [[11, 17]])
    np.testing.assert_array_equal(run1(tmp_path, "matmul", {"a": a, "b": b}),
                                  [[1 * 3 + 2 * 5, 1 * 4 + 2 * 6]])
    # alpha scales the product only: relu(0.5 * [11, 17] + [-5, -9]) = [0.5, 0]
    out = run1(tmp_path, "matmul", {"a": a, "b": b, "r": m([-5, -9])}, transpose_b=True,
               alpha=0.5, activation="relu")
    np.testing.assert_array_equal(out, [[0.5, 0]])


def test_matmul_broadcasts_batch_dims(tmp_path):
    a, b = rand(2, 1, 2, 3), rand(3, 3, 4, seed=1)
    assert out_types(tmp_path, "matmul", {"a": [2, 1, 2, 3], "b": [3, 3, 4]}) == [
        ([2, 3, 2, 4], "float32")]
    np.testing.assert_allclose(run1(tmp_path, "matmul", {"a": a, "b": b}), a @ b, rtol=1e-6)


def test_bmm(tmp_path):
    a = np.stack([np.eye(2), 2 * np.eye(2)]).astype(F32)
    b = m([1, 2], [3, 4])[None].repeat(2, 0)
    np.testing.assert_array_equal(run1(tmp_path, "bmm", {"a": a, "b": b}), [b[0], 2 * b[0]])


# -- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, inputs, attrs, match", [
    ("linear", {"x": [2, 4]}, {"out_features": 0}, "'out_features' must be >= 1, got 0"),
    ("linear", {"x": [2, "f"]}, {"out_features": 3}, "input features .* must be static"),
    ("linear", {"x": ([2, 4], "int32")}, {"out_features": 3}, "linear input must be a float tensor"),
    ("linear", {"x": [2, 4], "r": [3, 3]}, {"out_features": 3},
     r"residual \[3, 3\] does not match the linear output \[2, 3\]"),
    ("linear", {"x": [2, 4], "r": [1, 2, 3]}, {"out_features": 3}, "does not match"),  # grows
    ("matmul", {"a": [2, 3], "b": [4, 5]}, {}, r"inner dims differ: \[2, 3\] @ \[4, 5\]"),
    ("matmul", {"a": [2, 3], "b": [2, 3]}, {}, "inner dims differ"),
    ("matmul", {"a": [2, 3], "b": [4, 3]}, {"transpose_b": False}, "inner dims differ"),
    ("matmul", {"a": [3], "b": [3, 2]}, {}, "rank >= 2"),
    ("matmul", {"a": [2, 2, 3], "b": [3, 3, 4]}, {}, "do not broadcast"),
    ("matmul", {"a": [2, 3], "b": ([3, 4], "float16")}, {}, "different dtypes"),
    ("matmul", {"a": ([2, 3], "int32"), "b": ([3, 4], "int32")}, {}, "float tensor"),
    ("bmm", {"a": [2, 3], "b": [3, 4]}, {}, r"rank-3 inputs \[batch, m, k\]"),
    ("bmm", {"a": [2, 2, 3], "b": [1, 3, 4]}, {}, "bmm batch dims differ: 2 and 1 .matmul broadcasts"),
])
def test_errors(tmp_path, op, inputs, attrs, match):
    spec_error(tmp_path, op, inputs, match, model_dims={"f": 4}, **attrs)


# -- against PyTorch ----------------------------------------------------------------------------

@pytest.mark.torch
def test_linear_vs_torch(tmp_path):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, w, b, r = rand(2, 5, 32), rand(16, 32, seed=1), rand(16, seed=2), rand(5, 16, seed=3)
    out = run1(tmp_path, "linear", {"x": x, "r": r}, weights={"weight": w, "bias": b},
               out_features=16, activation="gelu_tanh")
    t = torch.from_numpy
    ref = F.gelu(F.linear(t(x), t(w), t(b)) + t(r), approximate="tanh").numpy()
    np.testing.assert_allclose(out, ref, **GEMM_TOL)


@pytest.mark.torch
@pytest.mark.parametrize("op, a_shape, b_shape, transpose_b", [
    ("matmul", (4, 8), (8, 3), False),
    ("matmul", (2, 1, 4, 8), (3, 8, 5), False),
    ("matmul", (2, 3, 4, 8), (5, 8), True),
    ("bmm", (3, 4, 8), (3, 6, 8), True),
])
def test_matmul_vs_torch(tmp_path, op, a_shape, b_shape, transpose_b):
    torch = pytest.importorskip("torch")
    a, b = rand(*a_shape), rand(*b_shape, seed=1)
    out = run1(tmp_path, op, {"a": a, "b": b}, transpose_b=transpose_b, alpha=0.25,
               activation="tanh")
    tb = torch.from_numpy(b)
    ref = torch.tanh(0.25 * torch.matmul(torch.from_numpy(a), tb.mT if transpose_b else tb))
    np.testing.assert_allclose(out, ref.numpy(), **GEMM_TOL)


def test_linear_over_an_in_out_weight(tmp_path):
    """GPT-2's Conv1D: weight [in, out], out = x @ weight + bias (torch.addmm(bias, x, weight))."""
    w, b = m([1, 3, 5], [2, 4, 6]), m(1, 1, 1)  # the transposed layout of the test above
    out = run1(tmp_path, "linear", {"x": m([1, 2])}, weights={"weight": w, "bias": b},
               out_features=3, weight_layout="in_out")
    np.testing.assert_array_equal(out, [[1 + 4 + 1, 3 + 8 + 1, 5 + 12 + 1]])
    assert weights_of(tmp_path, "linear", {"x": [4, 2]}, out_features=3,
                      weight_layout="in_out")["weight"] == ("n.weight", [2, 3])


def test_grouped_matmul_is_each_groups_rows_by_its_matrix(tmp_path):
    torch = pytest.importorskip("torch")
    a, b = rand(7, 4), rand(3, 4, 5, seed=1)
    ends = np.array([2, 2, 6], np.int32)  # rows 0-1, none, 2-5; row 6 past the last: zero
    want = torch.zeros(7, 5)
    for g, (start, end) in enumerate(zip([0, 2, 2], ends)):
        want[start:end] = torch.from_numpy(a[start:end]) @ torch.from_numpy(b[g])
    got = run1(tmp_path, "grouped_matmul", {"a": a, "b": b, "ends": ends})
    np.testing.assert_allclose(got, want.numpy(), **GEMM_TOL)
    got = run1(tmp_path, "grouped_matmul", {"a": a, "b": np.ascontiguousarray(b.transpose(0, 2, 1)),
                                             "ends": ends.astype(np.int64)}, transpose_b=True)
    np.testing.assert_allclose(got, want.numpy(), **GEMM_TOL)


def test_grouped_matmul_refuses_what_does_not_fit(tmp_path):
    from ait_build.errors import AitError
    with pytest.raises(AitError, match="must rise from 0 to at most 7 rows"):
        run1(tmp_path, "grouped_matmul", {"a": rand(7, 4), "b": rand(3, 4, 5),
                                           "ends": np.array([4, 2, 7], np.int32)})
    spec_error(tmp_path, "grouped_matmul", {"a": [7, 4], "b": [3, 5, 5], "ends": ([3], "int32")},
               "k or the groups differ")
    spec_error(tmp_path, "grouped_matmul", {"a": [7, 4], "b": [3, 4, 5], "ends": ([2], "int32")},
               "k or the groups differ")
    spec_error(tmp_path, "grouped_matmul", {"a": [7, 4], "b": [3, 4, 5], "ends": ([3], "float32")},
               "offsets must be int32 or int64")
