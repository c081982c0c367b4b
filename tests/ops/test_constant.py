"""constant and iota: values, dims in shapes, dtype rules."""

import numpy as np

from .helpers import out_types, run, spec_error


def test_constant_fills_with_the_model_dtype_by_default(tmp_path):
    (out,) = run(tmp_path, "constant", {}, shape=[2, 3], value=-2.5)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.full((2, 3), -2.5, np.float32))
    assert out_types(tmp_path, "constant", {}, shape=[2], value=1, dtype="bool") == [([2], "bool")]


def test_constant_shape_follows_dims(tmp_path):
    assert out_types(tmp_path, "constant", {}, model_dims={"seq": 16}, shape=["seq", 1],
                     value=0.0) == [(["seq", 1], "float32")]


def test_constant_int_values_must_fit(tmp_path):
    (out,) = run(tmp_path, "constant", {}, shape=[2], value=7, dtype="int64")
    assert out.dtype == np.int64 and out.tolist() == [7, 7]
    spec_error(tmp_path, "constant", {}, "not an integer", shape=[2], value=0.5, dtype="int32")
    spec_error(tmp_path, "constant", {}, "0 or 1", shape=[2], value=2, dtype="bool")
    spec_error(tmp_path, "constant", {}, "sizes >= 1", shape=[-1], value=0.0)


def test_iota_counts_along_its_axis(tmp_path):
    (out,) = run(tmp_path, "iota", {}, shape=[2, 3], axis=1, start=5, step=-2)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [[5, 3, 1], [5, 3, 1]])
    (col,) = run(tmp_path, "iota", {}, shape=[3, 2], axis=0, dtype="float32", start=0.5, step=0.25)
    np.testing.assert_array_equal(col, [[0.5, 0.5], [0.75, 0.75], [1.0, 1.0]])


def test_iota_matches_torch_arange_semantics(tmp_path):
    (out,) = run(tmp_path, "iota", {}, shape=[7], dtype="float32", start=0.1, step=0.3)
    want = (0.1 + 0.3 * np.arange(7, dtype=np.float64)).astype(np.float32)
    np.testing.assert_array_equal(out, want)


def test_iota_rules(tmp_path):
    spec_error(tmp_path, "iota", {}, "must be one of float32", shape=[3], dtype="bool")
    spec_error(tmp_path, "iota", {}, "out of range", shape=[3], axis=1)
    spec_error(tmp_path, "iota", {}, "not an integer", shape=[3], step=0.5)
