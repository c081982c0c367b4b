"""Comparisons, logic and where: hand-computed values, broadcasting, dtype rules."""

import numpy as np
import pytest

from .helpers import out_types, run1, spec_error

F32 = np.float32


def v(*values, dtype=F32):
    return np.array(values, dtype=dtype)


@pytest.mark.parametrize("op, expected", [
    ("equal", [False, True, False, False]), ("not_equal", [True, False, True, True]),
    ("less", [True, False, False, False]), ("less_equal", [True, True, False, False]),
    ("greater", [False, False, True, False]), ("greater_equal", [False, True, True, False]),
])
def test_comparisons_give_bool_and_nan_is_only_not_equal(tmp_path, op, expected):
    a, b = v(1, 2, 3, np.nan), v(2, 2, 2, np.nan)
    out = run1(tmp_path, op, {"a": a, "b": b})
    assert out.dtype == np.bool_ and out.tolist() == expected


def test_comparison_with_scalar_and_broadcasting(tmp_path):
    i = np.array([[0, 1, 2]], np.int64)
    assert run1(tmp_path, "equal", {"i": i}, scalar=1).tolist() == [[False, True, False]]
    rows, cols = np.arange(3, dtype=F32).reshape(3, 1), np.arange(3, dtype=F32).reshape(1, 3)
    assert out_types(tmp_path, "less_equal", {"c": [1, 3], "r": [3, 1]}) == [([3, 3], "bool")]
    causal = run1(tmp_path, "less_equal", {"c": cols, "r": rows})
    np.testing.assert_array_equal(causal, np.tril(np.ones((3, 3), bool)))


def test_comparison_rules(tmp_path):
    spec_error(tmp_path, "less", {"a": [3], "b": ([3], "int32")}, "different dtypes")
    spec_error(tmp_path, "less", {"a": ([3], "int32")}, "not an integer", scalar=0.5)
    spec_error(tmp_path, "less", {"a": [3]}, "two inputs, or one input and 'scalar'")


def test_logic_on_bools(tmp_path):
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    assert run1(tmp_path, "logical_and", {"a": a, "b": b}).tolist() == [True, False, False, False]
    assert run1(tmp_path, "logical_or", {"a": a, "b": b}).tolist() == [True, True, True, False]
    assert run1(tmp_path, "logical_not", {"a": a}).tolist() == [False, False, True, True]
    spec_error(tmp_path, "logical_and", {"a": [4], "b": ([4], "bool")}, "take bool tensors")


def test_where_broadcasts_all_three(tmp_path):
    cond = np.array([[True], [False]])
    x, y = v(1, 2, 3), v(-1)
    out = run1(tmp_path, "where", {"c": cond, "x": x, "y": y})
    np.testing.assert_array_equal(out, [[1, 2, 3], [-1, -1, -1]])
    assert out_types(tmp_path, "where", {"c": ([2, 1], "bool"), "x": [3], "y": [1]}) == \
        [([2, 3], "float32")]


def test_where_rules(tmp_path):
    spec_error(tmp_path, "where", {"c": [2], "x": [2], "y": [2]}, "condition must be a bool")
    spec_error(tmp_path, "where", {"c": ([2], "bool"), "x": [2], "y": ([2], "int64")},
               "different dtypes")


def test_masked_fill_as_where_matches_numpy(tmp_path):
    scores = np.random.default_rng(0).standard_normal((2, 4)).astype(F32)
    mask = np.array([[True, False, True, False], [False, False, True, True]])
    fill = v(-np.inf)
    out = run1(tmp_path, "where", {"m": mask, "fill": fill, "s": scores})
    want = scores.copy()
    want[mask] = -np.inf
    np.testing.assert_array_equal(out, want)


def test_cumsum_is_torch_cumsum_both_ways(tmp_path):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((3, 5, 4)).astype(np.float32)
    t = torch.from_numpy(x)
    np.testing.assert_allclose(run1(tmp_path, "cumsum", {"x": x}, axis=1),
                               torch.cumsum(t, 1).numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(run1(tmp_path, "cumsum", {"x": x}, axis=-1, reverse=True),
                               torch.flip(torch.cumsum(torch.flip(t, [2]), 2), [2]).numpy(),
                               rtol=1e-6, atol=1e-6)
    ids = np.array([[1, 0, 2, 2], [0, 0, 1, 3]], np.int64)
    np.testing.assert_array_equal(run1(tmp_path, "cumsum", {"ids": ids}, exclusive=True),
                                  [[0, 1, 1, 3], [0, 0, 0, 1]])


def test_cumsum_refuses_bools_and_scalars(tmp_path):
    spec_error(tmp_path, "cumsum", {"m": ([2, 3], "bool")}, "a number tensor of rank 1")
    spec_error(tmp_path, "cumsum", {"x": [2, 3]}, "axis", axis=2)
