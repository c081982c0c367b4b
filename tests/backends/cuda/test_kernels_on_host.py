"""The GPU layer's bandwidth kernels run on the host (host_emulation/: g++, one std::thread per
GPU thread) where no GPU is present: the depthwise convs (every window, stride, dilation, vector
width and epilogue of the `depthwise` op group; their window in the input's type as the h200
stages it, and as float32 on a copy of it without `async_copy`), the global average pools and squeeze-excitation's
channel scale (`pools_and_scales`), the fused concat + batch norm + activation kernels
(`concat_norms`), the tiled transposes (`layout_swaps`), the fused chains of data movement
(`movement_chains`: strided and padded copies), the channel concats (`shape`, `concat_norms`: one
kernel of 16-byte runs, or single elements), the elementwise template (`elementwise`: its
vector and per-element paths), the importers' ops (`import_families`) and resizes in 16-byte
vectors (`resizes`: nearest, bilinear, bicubic) and the grouped GEMM's CUDA-core kernel
(`experts`, float32: the 16-bit ones are CUTLASS's), in float16, bfloat16
and float32, against the
reference executor with the GPU tests' single-op tolerances, and in float16 once more on tensors
that start one element past an aligned address (the single-element fallbacks); and the explicit
im2col of the stem convs (`stem_conv`, float16 and float32) alone, its GEMM being CUTLASS's,
against NumPy's windows bit for bit, into 16-byte aligned rows and rows one element past; and the
kernel that scales a squeeze-excitation projection's weights by each image's gate. What it
catches: indexing, bounds, tiles that overrun the image, vector widths that do not divide the
channels, unaligned pointers; not what only a GPU shows (speed, races between blocks, the
compiler's device code).
About 5 minutes on 2 cores."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ait_build.ops.reference import random_inputs, run_reference
from ait_build.pipeline import emit, find_target
from ait_build.spec.model import load_model
from cuda_helpers import op_tolerance
from cuda_op_groups import op_spec
from host_emulation.emulated import HostModel, build, build_kernels, cuda_include

pytestmark = pytest.mark.nvcc

CASES = [("depthwise", "float16"), ("depthwise", "bfloat16"), ("depthwise", "float32"),
         ("pools_and_scales", "float16"), ("pools_and_scales", "bfloat16"),
         ("concat_norms", "float16"), ("concat_norms", "float32"), ("layout_swaps", "float16"),
         ("movement_chains", "float16"), ("elementwise", "float16"), ("import_families", "float16"),
         ("shape", "float16"), ("direct_stems", "float16"), ("direct_stems", "float32"),
         ("masks_and_clamps", "float16"), ("symbolic_strides", "float16"),
         ("resizes", "float16"), ("resizes", "float32"), ("experts", "float32")]


@pytest.mark.parametrize("group,dtype", CASES)
def test_own_kernels_match_reference_on_the_host(group, dtype, tmp_path):
    target = find_target("h200")  # its stems into <= 32 outputs run directly (direct_stems)
    assert group != "direct_stems" or target.cap("direct_stem_outputs") == 32
    _matches_reference(group, dtype, target, tmp_path)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_depthwise_float32_windows_on_the_host(dtype, tmp_path):
    """The depthwise kernel's float32 window (stage_input: targets without async_copy, as the
    mi250), on an h200 copy that lacks it: the stock h200 stages every window in the input's
    type."""
    target = _h200_copy(tmp_path, "h200_sync", r"\n  async_copy: true[^\n]*", "")
    assert not target.cap("async_copy")
    _matches_reference("depthwise", dtype, target, tmp_path)


def _h200_copy(tmp_path, name: str, pattern: str, replacement: str):
    """The h200 target under another name, `pattern` in its file replaced."""
    from ait_build.pipeline import load_target
    text = open(find_target("h200").source, encoding="utf-8").read()
    copy = tmp_path / f"{name}.yaml"
    copy.write_text(re.sub(pattern, replacement,
                           text.replace("\nname: h200\n", f"\nname: {name}\n", 1)))
    return load_target(str(copy))


def _matches_reference(group: str, dtype: str, target, tmp_path) -> None:
    """The op group built for `target` on the host against the reference executor."""
    if cuda_include() is None:
        pytest.skip("no CUDA headers (CUDA_HOME/include/cuda_runtime.h)")
    spec = op_spec(group, dtype)
    graph = load_model(spec)
    out = str(tmp_path / graph.name)
    emission = emit(spec, target, out)
    assert not any("sm80" in s or "sm90" in s for s in emission.compiled_sources)  # no CUTLASS
    model = HostModel(out, build(out, graph.name))
    # batch 2 on tensors one element past an aligned address: the single-element fallbacks
    for batch, shifted in ((1, False), (3, False), (2, dtype == "float16")):
        inputs = random_inputs(graph, {"batch": batch}, seed=batch)
        ref = run_reference(graph, inputs)
        got = model.run(inputs, {"batch": batch}, {k: v.shape for k, v in ref.items()}, shifted)
        for name, expected in ref.items():
            actual = got[name].astype(np.float32)
            scale = float(np.abs(expected).max())
            np.testing.assert_allclose(actual, expected, **op_tolerance(dtype, scale),
                                       err_msg=f"{group}/{dtype}/batch{batch}: {name}"
                                       + (" (unaligned)" if shifted else ""))


def windows(x: np.ndarray, attrs: dict, width: int) -> np.ndarray:
    """NumPy's im2col of NHWC `x`: [N, HO, WO, width], (kh, kw, c) order, zero columns after."""
    from ait_build.ops.conv import window_params
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = window_params(attrs)
    n, h, w, c = x.shape
    ho, wo = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xp = np.pad(x, [(0, 0), (ph, ph), (pw, pw), (0, 0)])
    taps = [xp[:, r * dh:r * dh + sh * (ho - 1) + 1:sh, s * dw:s * dw + sw * (wo - 1) + 1:sw]
            for r in range(kh) for s in range(kw)]
    rows = np.concatenate(taps, axis=-1)
    return np.pad(rows, [(0, 0)] * 3 + [(0, width - rows.shape[-1])])


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_stem_im2col_matches_numpy_on_the_host(dtype, tmp_path):
    """Each stem conv's im2col kernel (templates/gpu/im2col.cu.j2) writes NumPy's windows bit for
    bit, zeros where a window leaves the image and in the padding columns, over rows that held
    NaNs; into a 16-byte aligned slot (16-byte stores) and one element past one (the per-element
    stores). On an h200 copy with `im2col_channels: 64`, so that the two convs over 16 channels
    take the whole-chunk path (16-byte loads into the strip, 16-byte copies out of it)."""
    import ctypes
    if cuda_include() is None:
        pytest.skip("no CUDA headers (CUDA_HOME/include/cuda_runtime.h)")
    from ait_build.pipeline import build_plan
    target = _h200_copy(tmp_path, "h200_im2col", r"\n  im2col_channels: \d+",
                        "\n  im2col_channels: 64")
    assert target.cap("im2col_channels") == 64
    spec = op_spec("stem_conv", dtype)
    out = str(tmp_path / "stem")
    emit(spec, target, out)
    plan = build_plan(spec, target)
    steps = [s for s in plan.steps if s.kernel.label == "im2col"]
    assert len(steps) == 9 and not any(n.op == "pad" for n in plan.graph.nodes)
    kernels = list({s.kernel.name: s.kernel for s in steps}.values())
    driver = '#include "ait_cuda.h"\nnamespace ait_kernels {\n'
    driver += "".join(f"int {k.name}(const ait::Ctx& cx, {k.params});\n" for k in kernels) + "}\n"
    ctype = plan.backend.ctypes[dtype]
    for k in kernels:
        driver += (f'extern "C" int run_{k.name}(void* rows, const void* x, int64_t n, int64_t h, '
                   f"int64_t w, int64_t ho, int64_t wo) {{\n  ait::Ctx cx{{nullptr, 4, nullptr, 0}};\n"
                   f"  return ait_kernels::{k.name}(cx, static_cast<{ctype}*>(rows), "
                   f"static_cast<const {ctype}*>(x), n, h, w, ho, wo);\n}}\n")
    lib = ctypes.CDLL(build_kernels(out, kernels, driver))
    graph = load_model(spec)
    inputs = random_inputs(graph, {"batch": 2}, seed=2)
    for step in steps:
        node = graph.node(step.node)
        x = np.ascontiguousarray(inputs[node.inputs[0]])
        width = dict(step.kernel.context)["width"]
        expected = windows(x, node.attrs, width)
        for shifted in (False, True):
            buf = np.full(expected.size + 16, np.nan, x.dtype)
            start = (-buf.ctypes.data % 16) // x.itemsize + (1 if shifted else 0)
            got = buf[start:start + expected.size].reshape(expected.shape)
            h, w = x.shape[1:3]
            run = lib[f"run_{step.kernel.name}"]
            run.argtypes = [ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_int64] * 5
            assert run(got.ctypes.data, x.ctypes.data, 2, h, w, *expected.shape[1:3]) == 0
            np.testing.assert_array_equal(got.view(f"u{x.itemsize}"),
                                          expected.view(f"u{x.itemsize}"),
                                          err_msg=f"{step.node}/{dtype}" + (" (unaligned)" if shifted else ""))


def test_gate_scaled_weights_match_numpy_on_the_host(tmp_path):
    """The kernel that scales a projection's weights [O, C] by each image's gate before the GEMM
    batched over the images (gpu/gemm.py scaled_pointwise: channel_scale.cu.j2 with every image
    reading the same rows) writes float16(w * gate) bit for bit: 16-byte vectors (C = 64), single
    elements (C = 13, and pointers one element past an aligned address)."""
    import ctypes
    if cuda_include() is None:
        pytest.skip("no CUDA headers (CUDA_HOME/include/cuda_runtime.h)")
    from ait_build.pipeline import build_plan
    spec = op_spec("squeeze_excitation")
    out = str(tmp_path / "gates")
    emit(spec, "h200", out)
    steps = [s for s in build_plan(spec, "h200").steps if s.kernel.label == "scaled_weights"]
    assert [s.node for s in steps] == ["a_proj", "b_proj"]
    kernel = steps[0].kernel
    assert steps[1].kernel.name == kernel.name
    driver = ('#include "ait_cuda.h"\nnamespace ait_kernels {\n'
              f"int {kernel.name}(const ait::Ctx& cx, {kernel.params});\n}}\n"
              'extern "C" int run(void* out, const void* w, const void* s, int64_t rows, '
              "int64_t P, int64_t C, int64_t s_stride) {\n  ait::Ctx cx{nullptr, 4, nullptr, 0};\n"
              f"  return ait_kernels::{kernel.name}(cx, static_cast<__half*>(out), "
              "static_cast<const __half*>(w), static_cast<const __half*>(s), rows, P, C, "
              "s_stride);\n}\n")
    run = ctypes.CDLL(build_kernels(out, [kernel], driver)).run
    run.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 4
    rng = np.random.default_rng(0)

    def aligned(values: np.ndarray, shifted: bool) -> np.ndarray:
        buf = np.full(values.size + 16, np.nan, np.float16)
        start = (-buf.ctypes.data % 16) // 2 + (1 if shifted else 0)
        view = buf[start:start + values.size].reshape(values.shape)
        view[...] = values
        return view

    for n, o, c, shifted in ((3, 24, 64, False), (2, 5, 13, False), (2, 8, 64, True)):
        w = rng.standard_normal((o, c)).astype(np.float16)
        gate = rng.random((n, c)).astype(np.float16)
        product = w[None].astype(np.float32) * gate[:, None].astype(np.float32)
        expected = product.astype(np.float16)
        got = aligned(np.full(expected.shape, np.nan, np.float16), shifted)
        wa, ga = aligned(w, shifted), aligned(gate, shifted)
        assert run(got.ctypes.data, wa.ctypes.data, ga.ctypes.data, n * o, o, c, c) == 0
        np.testing.assert_array_equal(got.view("u2"), expected.view("u2"),
                                      err_msg=f"{n}x{o}x{c}" + (" (unaligned)" if shifted else ""))
