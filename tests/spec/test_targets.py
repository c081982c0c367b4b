"""Target specs: every checked-in target loads, and lookups by name say what exists."""

from __future__ import annotations

import os

import pytest

from ait_build.errors import SpecError
from ait_build.pipeline import find_target, load_target
from ait_build.spec.target import known_targets, stock_targets_dir

EXPECTED = {"cpu": ("cpu", ""), "cpu_mkl": ("cpu", ""), "cpu_openblas": ("cpu", ""), "a100": ("cuda", "sm_80"), "h100": ("cuda", "sm_90a"),
            "h200": ("cuda", "sm_90a"), "mi250": ("rocm", "gfx90a")}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_checked_in_targets_load(name):
    target = find_target(name)
    assert (target.backend, target.arch) == EXPECTED[name]
    assert target.name == name and target.cxx
    assert "float32" in target.cap("dtypes")


def test_find_target_by_path():
    path = os.path.join(stock_targets_dir(), "h200.yaml")
    assert find_target(path) == load_target(path)


def test_unknown_target_lists_the_known_ones():
    with pytest.raises(SpecError) as info:
        find_target("h20")
    message = info.value.message
    assert "unknown target 'h20' (did you mean 'h200'?)" in message
    assert "known targets: " + ", ".join(known_targets()) in message
    assert set(EXPECTED) <= set(known_targets())


def test_defaults_and_digest(write):
    path = write("t.yaml", "name: t\nbackend: cpu\ncompiler: {cxx: g++}\n", kind="Target")
    target = load_target(path)
    assert target.arch == "" and target.flags == () and target.cap("cuda_graphs") is False
    assert target.cap("channel_alignment") == 1 and target.kernel("gemm", "none") == "none"
    other = load_target(write("u.yaml", "name: t\nbackend: cpu\ncompiler: {cxx: g++, flags: [-O2]}\n",
                              kind="Target"))
    assert target.digest() != other.digest()


def test_capabilities_and_device_facts(write):
    path = write("t.yaml", "name: t\nbackend: cuda\narch: sm_80\ncompiler: {cxx: nvcc}\n"
                           "device: {sm_count: 108, hbm_tbps: 2.0}\n"
                           "capabilities: {dtypes: [float16], channel_alignment: 8, cuda_graphs: true}\n"
                           "kernels: {gemm: cutlass_sm80}\n", kind="Target")
    target = load_target(path)
    assert target.fact("sm_count") == 108 and target.fact("hbm_tbps") == 2.0
    assert target.cap("dtypes") == ("float16",) and target.cap("channel_alignment") == 8
    assert target.kernel("gemm") == "cutlass_sm80"


def test_im2col_channels_is_a_count_off_by_default(write):
    body = "name: t\nbackend: cuda\narch: sm_90a\ncompiler: {cxx: nvcc}\n"
    assert load_target(write("t.yaml", body, kind="Target")).cap("im2col_channels") == 0
    assert find_target("h200").cap("im2col_channels") == 0  # 64 measured no faster (docs/cuda.md)
    assert find_target("a100").cap("im2col_channels") == 0
    bad = write("u.yaml", body + "capabilities: {im2col_channels: -8}\n", kind="Target")
    with pytest.raises(SpecError, match="'im2col_channels' in capabilities must be at least 0, got -8"):
        load_target(bad)


def test_dependent_launch_max_mb_is_a_size_in_mib_unlimited_by_default(write):
    body = "name: t\nbackend: cuda\narch: sm_90a\ncompiler: {cxx: nvcc}\n"
    assert load_target(write("t.yaml", body, kind="Target")).cap("dependent_launch_max_mb") == 0
    bad = write("u.yaml", body + "capabilities: {dependent_launch: true, dependent_launch_max_mb: -1}\n",
                kind="Target")
    with pytest.raises(SpecError, match="'dependent_launch_max_mb' in capabilities must be at least 0, got -1"):
        load_target(bad)


def test_precision_defaults_to_float32_accumulation(write):
    for name in EXPECTED:  # no checked-in target opts in
        assert find_target(name).precision == (("accumulate", "float32"),)
    target = load_target(write("t.yaml", "name: t\nbackend: cuda\narch: sm_80\ncompiler: {cxx: nvcc}\n",
                               kind="Target"))
    assert [target.accumulator(d) for d in ("float16", "bfloat16", "float32")] == ["float32"] * 3


def test_float16_accumulation_is_for_float16_models_only(write):
    body = "name: t\nbackend: cuda\narch: sm_90a\ncompiler: {cxx: nvcc}\n"
    plain = load_target(write("t.yaml", body, kind="Target"))
    opted = load_target(write("u.yaml", body + "precision: {accumulate: float16}\n", kind="Target"))
    assert opted.precision == (("accumulate", "float16"),)
    # bfloat16 has no 16-bit tensor-core accumulate; float32 models keep 3xTF32
    assert [opted.accumulator(d) for d in ("float16", "bfloat16", "float32")] == \
        ["float16", "float32", "float32"]
    assert opted.digest() != plain.digest()
    spelled_out = load_target(write("v.yaml", body + "precision: {accumulate: float32}\n", kind="Target"))
    assert spelled_out.digest() == plain.digest()


@pytest.mark.parametrize("backend, arch, kernels, fits", [
    ("cuda", "sm_90a", "{gemm: cutlass_sm80, attention: fmha_sm80}", True),  # Ampere's run on Hopper
    ("cuda", "sm_89", "{conv2d: cutlass_sm80}", True),
    ("cuda", "sm_90", "{gemm: cutlass_sm90}", False),  # wgmma and TMA: sm_90a code only
    ("cuda", "sm_80", "{attention: fmha_sm90}", False),
    ("cuda", "sm_75", "{gemm: cutlass_sm80}", False),
    ("rocm", "gfx942", "{gemm: rocm_mfma}", True),
    ("rocm", "gfx90a:xnack-", "{conv2d: rocm_mfma}", True),
    ("rocm", "gfx1100", "{gemm: rocm_mfma}", False),  # RDNA: no MFMA
    ("rocm", "gfx1100", "{attention: gpu_fused}", True),
])
def test_a_kernel_family_runs_on_the_archs_its_backend_says(write, backend, arch, kernels, fits):
    path = write("t.yaml", f"name: t\nbackend: {backend}\narch: '{arch}'\ncompiler: {{cxx: c}}\n"
                           f"kernels: {kernels}\n", kind="Target")
    if fits:
        assert load_target(path).arch == arch
    else:
        with pytest.raises(SpecError, match=rf"runs on arch .*; this target's arch is {arch}"):
            load_target(path)


def test_the_checks_ask_the_backend_table_they_are_given(write):
    """spec/ imports no backend: a table that names other backends changes what loads."""
    from ait_build.backends import BACKENDS
    from ait_build.spec import target as target_file
    path = write("t.yaml", "name: t\nbackend: cpu\ncompiler: {cxx: g++}\n", kind="Target")
    assert target_file.load_target(path, BACKENDS).backend == "cpu"
    with pytest.raises(SpecError, match="unknown backend 'cpu'; one of cuda"):
        target_file.load_target(path, {"cuda": BACKENDS["cuda"]})


def test_a_tensor_in_a_dtype_the_backend_cannot_hold_is_located(write):
    """A float32 model's bfloat16 input on mi250 (HIP has no device bfloat16) crashed the planner
    with a KeyError; it is the input's place that says so."""
    from ait_build.pipeline import build_plan
    path = write("m.yaml", """\
        name: m
        inputs:
          x: {shape: [2, 16], dtype: bfloat16}
        graph:
          - {name: c, op: cast, dtype: float32}
          - {name: fc, op: linear, out_features: 8}
        outputs: [fc]
        """)
    with pytest.raises(SpecError) as info:
        build_plan(path, "mi250")
    assert str(info.value).startswith(f"{path}:5:3: error: tensor 'x' is bfloat16, which the rocm "
                                      "backend of target 'mi250' cannot hold; use one of float32")
    assert build_plan(path, "cpu").kernels  # the cpu backend holds bfloat16 (as float32)


@pytest.mark.parametrize("lines, error", [
    ('arch: "x86-64 -O0"\ncompiler: {cxx: g++}', "5:7: error: arch must be one architecture name"),
    ("arch: x86-64;rm\ncompiler: {cxx: g++}", "5:7: error: arch must be one architecture name"),
    ("compiler: {cxx: g++, min_version: .nan}", "5:35: error: compiler.min_version must be a version"),
    ("compiler: {cxx: g++, min_version: abc}", "5:35: error: compiler.min_version must be a version"),
])
def test_arch_and_min_version_are_checked_where_they_are_written(write, lines, error):
    """An arch goes into a compiler flag as it is, and a min_version is compared with the
    compiler's: a word with spaces or a NaN was taken, then failed in the compiler or never."""
    path = write("t.yaml", f"name: t\nbackend: cpu\n{lines}\n", kind="Target")
    with pytest.raises(SpecError) as info:
        load_target(path)
    assert str(info.value).startswith(f"{path}:{error}"), str(info.value)


@pytest.mark.parametrize("arch", ["gfx90a:xnack-", "x86-64-v3", "armv8.2-a+sve", "sm_90a"])
def test_arch_names_compilers_use_are_taken(arch):
    from ait_build.spec.target import ARCH
    assert ARCH.fullmatch(arch)


def test_an_empty_dtypes_list_is_located(write):
    path = write("t.yaml", "name: t\nbackend: cpu\ncompiler: {cxx: g++}\ncapabilities: {dtypes: []}\n",
                 kind="Target")
    with pytest.raises(SpecError, match="capabilities.dtypes is empty"):
        load_target(path)
