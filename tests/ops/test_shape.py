"""Shape and data-movement ops: exact, so every comparison here is bit-exact."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ait_build.ir.dims import Dim
from ait_build.ops.shape import slice_range

from .helpers import out_types, run, run1, spec_error

F32 = np.float32
A = np.arange(24, dtype=F32).reshape(2, 3, 4)
DIMS = {"batch": 8, "seq": 16}


def same(got, expected):
    np.testing.assert_array_equal(got, expected)
    assert got.shape == np.asarray(expected).shape


# -- reshape / flatten --------------------------------------------------------------------------

@pytest.mark.parametrize("shape, expected", [
    ([4, -1], [4, 6]),
    ([0, -1], [2, 12]),  # 0 copies the input's dim at that position
    ([0, 0, 2, 2], [2, 3, 2, 2]),
    ([-1], [24]),
])
def test_reshape(tmp_path, shape, expected):
    same(run1(tmp_path, "reshape", {"x": A}, shape=shape), A.reshape(expected))


def test_reshape_with_dim_names(tmp_path):
    inputs = {"x": ["batch", "seq", 6]}
    assert out_types(tmp_path, "reshape", inputs, model_dims=DIMS, shape=[0, "seq", 2, -1]) == [
        (["batch", "seq", 2, 3], "float32")]
    assert out_types(tmp_path, "reshape", inputs, model_dims=DIMS, shape=[-1, 6])[0][0] == [
        "batch*seq", 6]
    x = np.arange(2 * 5 * 6, dtype=F32).reshape(2, 5, 6)
    out = run1(tmp_path, "reshape", {"x": x}, shapes={"x": ["batch", "seq", 6]}, model_dims=DIMS,
               shape=["batch", -1])
    same(out, x.reshape(2, 30))


@pytest.mark.parametrize("attrs, shape", [({}, [2, 12]), ({"start_dim": 0, "end_dim": 1}, [6, 4]),
                                          ({"start_dim": -2}, [2, 12]), ({"start_dim": 2}, [2, 3, 4])])
def test_flatten(tmp_path, attrs, shape):
    same(run1(tmp_path, "flatten", {"x": A}, **attrs), A.reshape(shape))


# -- permute / transpose / expand ---------------------------------------------------------------

def test_permute_and_transpose(tmp_path):
    same(run1(tmp_path, "permute", {"x": A}, dims=[2, 0, 1]), A.transpose(2, 0, 1))
    same(run1(tmp_path, "permute", {"x": A}, dims=[-1, 0, 1]), A.transpose(2, 0, 1))
    same(run1(tmp_path, "transpose", {"x": A}, dim0=0, dim1=-1), A.transpose(2, 1, 0))
    # NHWC -> NCHW moves the channel value 5 of pixel (0, 1) to [0, 5, 0, 1]
    x = np.zeros((1, 2, 2, 8), F32)
    x[0, 0, 1, 5] = 7
    assert run1(tmp_path, "permute", {"x": x}, dims=[0, 3, 1, 2])[0, 5, 0, 1] == 7


def test_expand(tmp_path):
    x = np.array([[1], [2], [3]], F32)
    same(run1(tmp_path, "expand", {"x": x}, shape=[3, 4]), np.repeat(x, 4, 1))
    same(run1(tmp_path, "expand", {"x": x}, shape=[-1, 2]), np.repeat(x, 2, 1))
    same(run1(tmp_path, "expand", {"x": x}, shape=[2, 3, 2]), np.broadcast_to(x, (2, 3, 2)))


# -- concat / split -----------------------------------------------------------------------------

def test_concat(tmp_path):
    a, b, c = A[:, :1], A[:, 1:], A[:, :2]
    same(run1(tmp_path, "concat", {"a": a, "b": b, "c": c}, axis=1), np.concatenate([a, b, c], 1))
    assert out_types(tmp_path, "concat", {"a": ["batch", 4], "b": ["batch", 4]}, model_dims=DIMS,
                     axis=0)[0][0] == ["2*batch", 4]


@pytest.mark.parametrize("attrs, parts", [
    ({"sections": 2, "axis": 2}, [A[:, :, :2], A[:, :, 2:]]),
    ({"sizes": [1, 3]}, [A[..., :1], A[..., 1:]]),  # axis defaults to -1
    ({"sizes": [2, 1], "axis": 1}, [A[:, :2], A[:, 2:]]),
    ({"sections": 3, "axis": -2}, [A[:, :1], A[:, 1:2], A[:, 2:]]),
])
def test_split(tmp_path, attrs, parts):
    outs = run(tmp_path, "split", {"x": A}, n_outputs=len(parts), **attrs)
    for got, expected in zip(outs, parts):
        same(got, expected)


def test_split_symbolic(tmp_path):
    got = out_types(tmp_path, "split", {"x": ["batch", 4]}, model_dims=DIMS, n_outputs=2, sections=2)
    assert got == [(["batch", 2], "float32")] * 2
    # a symbolic dim splits only when it is a known multiple
    spec_error(tmp_path, "split", {"x": ["seq"]}, "size seq does not divide into 2", model_dims=DIMS,
               n_outputs=2, sections=2)


# -- slice --------------------------------------------------------------------------------------

@pytest.mark.parametrize("attrs, index", [
    ({"axis": 2, "start": 1, "end": 4, "step": 2}, np.s_[:, :, 1:4:2]),
    ({"axis": 2, "start": -2}, np.s_[:, :, -2:]),  # negative bounds count from the end
    ({"axis": 2, "start": 0, "end": -1}, np.s_[:, :, :-1]),
    ({"axis": -1, "start": 2, "end": 100}, np.s_[:, :, 2:100]),  # clamped, as in Python
    ({"axis": 0, "start": 1}, np.s_[1:]),
    ({"axis": 1, "start": 0, "end": 3, "step": 5}, np.s_[:, 0:3:5]),
])
def test_slice(tmp_path, attrs, index):
    same(run1(tmp_path, "slice", {"x": A}, **attrs), A[index])


def test_slice_symbolic_bounds(tmp_path):
    inputs = {"x": ["batch", "seq", 4]}
    assert out_types(tmp_path, "slice", inputs, model_dims=DIMS, axis=1, start=1)[0][0] == [
        "batch", "seq - 1", 4]
    assert out_types(tmp_path, "slice", inputs, model_dims=DIMS, axis=1, start=0, end=-2)[0][0] == [
        "batch", "seq - 2", 4]
    x = np.arange(2 * 5 * 4, dtype=F32).reshape(2, 5, 4)
    out = run1(tmp_path, "slice", {"x": x}, shapes={"x": ["batch", "seq", 4]}, model_dims=DIMS,
               axis=1, start=1, end=-1)
    same(out, x[:, 1:-1])
    # a bound beyond a symbolic dim cannot be clamped at build time, and a kernel would read
    # outside its input there: the spec is refused where the node is written
    spec_error(tmp_path, "slice", inputs, r"slice \[0:7\] of a dim of size seq ends past the "
               "dim's last element at seq=1", model_dims=DIMS, axis=1, start=0, end=7)
    spec_error(tmp_path, "slice", inputs, r"slice \[-7:\] of a dim of size seq starts before the "
               "dim's first element at seq=1", model_dims=DIMS, axis=1, start=-7)
    # another dim as a bound: lowest where that dim is largest and the sliced one smallest
    spec_error(tmp_path, "slice", inputs, r"slice \[0:batch\] of a dim of size seq ends past the "
               "dim's last element at batch=8, seq=1", model_dims=DIMS, axis=1, start=0, end="batch")


def test_slice_with_a_step_over_a_symbolic_size(tmp_path):
    """A step over a symbolic size: the result's size is a polynomial where the sliced length's
    dim terms divide by the step (an audio length 5*frames + 2 read by a conv of stride 5)."""
    inputs = {"x": ["batch", "5*frames + 2", 4]}
    dims = {"batch": 4, "frames": {"min": 2, "max": 8, "opt": 3}}
    assert out_types(tmp_path, "slice", inputs, model_dims=dims, axis=1, start=1, end=-1,
                     step=5)[0][0] == ["batch", "frames", 4]
    assert out_types(tmp_path, "slice", inputs, model_dims=dims, axis=1, step=5)[0][0] == [
        "batch", "frames + 1", 4]  # ceil((5*frames + 2) / 5)
    for frames in (2, 3):
        x = np.arange(2 * (5 * frames + 2) * 4, dtype=F32).reshape(2, 5 * frames + 2, 4)
        out = run1(tmp_path, "slice", {"x": x}, shapes={"x": inputs["x"]}, model_dims=dims,
                   axis=1, start=2, step=5)
        same(out, x[:, 2::5])
    spec_error(tmp_path, "slice", inputs, r"slice \[0::2\] of a dim of size 5\*frames \+ 2: over "
               r"a symbolic size the sliced length \(5\*frames \+ 2\) must be a multiple of the "
               "step 2 plus a constant", model_dims=dims, axis=1, step=2)


@pytest.mark.parametrize("start, end, step, size, expected", [
    (-2, None, 1, 4, (2, 2)), (1, 100, 2, 6, (1, 3)), (-100, 2, 1, 5, (0, 2)),
    (1, -1, 1, "seq", ("1", "seq - 2")), (-3, None, 1, "seq", ("seq - 3", "3")),
    (0, None, 320, Dim.of("frames") * 320 + 80, ("0", "frames + 1")),
    (9, None, 5, Dim.of("frames") * 320 + 80, ("9", "64*frames + 15")),  # a conv's last tap
])
def test_slice_range_gives_kernels_their_offset(start, end, step, size, expected):
    attrs = {"start": Dim.of(start), "end": None if end is None else Dim.of(end), "step": step}
    first, length = slice_range(attrs, Dim.of(size))
    assert (str(first), str(length)) == tuple(str(e) for e in expected)


# -- pad ----------------------------------------------------------------------------------------

def test_pad(tmp_path):
    x = np.array([[1, 2], [3, 4]], F32)
    out = run1(tmp_path, "pad", {"x": x}, pads=[1, 0, 0, 2], value=-1.0)  # dim 0 first
    same(out, [[-1, -1, -1, -1], [1, 2, -1, -1], [3, 4, -1, -1]])


# -- errors -------------------------------------------------------------------------------------

X = {"x": [2, 3, 4]}


@pytest.mark.parametrize("op, inputs, attrs, match", [
    ("reshape", X, {"shape": [-1, -1]}, "at most one -1"),
    ("reshape", X, {"shape": [5, 5]}, r"\[2, 3, 4\] \(24 elements\) cannot become \[5, 5\]"),
    ("reshape", X, {"shape": [5, -1]}, "cannot infer -1: .* not a multiple of 5"),
    ("reshape", X, {"shape": [0, 0, 0, 0]}, "0 at position 3 copies a dim the input lacks"),
    ("reshape", X, {"shape": [-2, 12]}, "bad size -2"),
    ("reshape", X, {"shape": ["seqq", -1]}, "unknown dim 'seqq' .did you mean 'seq'"),
    ("flatten", X, {"start_dim": 2, "end_dim": 1}, "start_dim 2 is after end_dim 1"),
    ("flatten", X, {"start_dim": 3}, "axis 3 is out of range for a rank-3 tensor"),
    ("permute", X, {"dims": [0, 1]}, r"dims \[0, 1\] are not a permutation of 0..2"),
    ("permute", X, {"dims": [0, 1, 1]}, "not a permutation"),
    ("permute", X, {"dims": [0, 1, 5]}, "axis 5 is out of range"),
    ("transpose", X, {"dim0": 0, "dim1": 3}, "axis 3 is out of range"),
    ("expand", X, {"shape": [2, 5, 4]}, "dim 1 of size 3 cannot become 5"),
    ("expand", X, {"shape": [3, 4]}, "fewer dims"),
    ("expand", X, {"shape": [-1, 2, 3, 4]}, "-1 is only allowed for existing dims"),
    ("expand", {"x": [1, 3]}, {"shape": [0, 3]}, "bad size 0"),
    ("concat", {"a": [2, 3], "b": [2, 4]}, {"axis": 0}, "differ outside the concat axis"),
    ("concat", {"a": [2, 3], "b": [2, 3, 1]}, {"axis": 0}, "differ outside the concat axis"),
    ("concat", {"a": [2, 3], "b": ([2, 3], "int32")}, {"axis": 0}, "different dtypes"),
    ("concat", {"a": [2, 3]}, {"axis": 2}, "axis 2 is out of range"),
    ("split", X, {"sizes": [1, 2]}, r"sizes \[1, 2\] do not add up to 4"),
    ("split", X, {"sizes": [4, 0]}, "must all be >= 1"),
    ("split", X, {"sizes": [5, -1]}, "must all be >= 1"),
    ("split", X, {"sections": 3}, "size 4 does not divide into 3 equal sections"),
    ("split", X, {"sections": 2, "sizes": [2, 2]}, "'sections' or 'sizes', not both"),
    ("split", X, {}, "needs 'sections'"),
    ("slice", X, {"axis": 0, "step": 0}, "step must be >= 1"),
    ("slice", X, {"axis": 0, "start": 5}, "is empty"),
    ("slice", X, {"axis": 0, "start": 1, "end": 1}, "is empty"),
    ("slice", {"x": ["seq", 4]}, {"axis": 0, "start": 1, "step": 2}, "must be a multiple of the step 2"),
    ("slice", X, {"axis": 3}, "axis 3 is out of range"),
    ("pad", X, {"pads": [1, 1]}, "needs 6 non-negative ints"),
    ("pad", X, {"pads": [0, 0, -1, 0, 0, 0]}, "non-negative"),
])
def test_errors(tmp_path, op, inputs, attrs, match):
    n = 2 if op == "split" else 1
    spec_error(tmp_path, op, inputs, match, model_dims=DIMS, n_outputs=n, **attrs)


# -- properties ---------------------------------------------------------------------------------

@st.composite
def shape_and_factorization(draw):
    """A shape, and another shape with the same number of elements."""
    factors = draw(st.lists(st.sampled_from([2, 3, 5]), min_size=1, max_size=5))
    def split():
        cuts = sorted(draw(st.sets(st.integers(1, len(factors) - 1), max_size=3))) \
            if len(factors) > 1 else []
        bounds = [0] + cuts + [len(factors)]
        return [int(np.prod(factors[a:b])) for a, b in zip(bounds, bounds[1:])]
    return split(), split()


@settings(max_examples=25, deadline=None)
@given(shapes=shape_and_factorization(), minus=st.booleans())
def test_reshape_round_trip(tmp_path_factory, shapes, minus):
    src, dst = shapes
    tmp = tmp_path_factory.mktemp("rs")
    x = np.arange(int(np.prod(src)), dtype=F32).reshape(src)
    target = [-1] + dst[1:] if minus else dst
    y = run1(tmp, "reshape", {"x": x}, shape=target)
    same(y, x.reshape(dst))
    same(run1(tmp, "reshape", {"x": y}, shape=src), x)


@settings(max_examples=25, deadline=None)
@given(perm=st.integers(1, 4).flatmap(lambda r: st.permutations(list(range(r)))))
def test_permute_then_inverse_is_identity(tmp_path_factory, perm):
    tmp = tmp_path_factory.mktemp("pm")
    x = np.arange(int(np.prod(range(2, 2 + len(perm)))), dtype=F32).reshape(range(2, 2 + len(perm)))
    y = run1(tmp, "permute", {"x": x}, dims=perm)
    same(y, x.transpose(perm))
    same(run1(tmp, "permute", {"x": y}, dims=[int(i) for i in np.argsort(perm)]), x)


# -- against PyTorch ----------------------------------------------------------------------------

@pytest.mark.torch
def test_data_movement_vs_torch(tmp_path):
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(A)
    # F.pad lists the LAST dim first; our pads list dim 0 first (and every dim)
    same(run1(tmp_path, "pad", {"x": A}, pads=[0, 0, 1, 2, 3, 0], value=0.5),
         torch.nn.functional.pad(t, (3, 0, 1, 2), value=0.5).numpy())
    same(run1(tmp_path, "concat", {"a": A, "b": A}, axis=-1), torch.cat([t, t], -1).numpy())
    for got, ref in zip(run(tmp_path, "split", {"x": A}, n_outputs=3, sizes=[1, 1, 2]),
                        torch.split(t, [1, 1, 2], dim=-1)):
        same(got, ref.numpy())
    same(run1(tmp_path, "flatten", {"x": A}), torch.nn.Flatten()(t).numpy())
    same(run1(tmp_path, "expand", {"x": A[:, :1]}, shape=[2, 3, -1]),
         t[:, :1].expand(2, 3, -1).numpy())


def test_roll_matches_numpy_and_wraps_negative_shifts(tmp_path):
    x = np.arange(2 * 5 * 4, dtype=np.float32).reshape(2, 5, 4)
    out = run1(tmp_path, "roll", {"x": x}, shifts=[2, -3], dims=[1, 2])
    np.testing.assert_array_equal(out, np.roll(x, (2, -3), axis=(1, 2)))
    # a full turn is no shift
    np.testing.assert_array_equal(run1(tmp_path, "roll", {"x": x}, shifts=[5], dims=[1]), x)


def test_roll_rules(tmp_path):
    spec_error(tmp_path, "roll", {"x": [2, 3]}, "one shift per dim", shifts=[1, 1], dims=[0])
    spec_error(tmp_path, "roll", {"x": [2, 3]}, "twice", shifts=[1, 1], dims=[1, -1])
    spec_error(tmp_path, "roll", {"x": ["batch", 3]}, "static size", model_dims={"batch": 4},
               shifts=[1], dims=[0])


def test_roll_vs_torch(tmp_path):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((1, 8, 8, 3)).astype(np.float32)
    want = torch.roll(torch.from_numpy(x), shifts=(-3, -3), dims=(1, 2)).numpy()
    np.testing.assert_array_equal(run1(tmp_path, "roll", {"x": x}, shifts=[-3, -3], dims=[1, 2]),
                                  want)
