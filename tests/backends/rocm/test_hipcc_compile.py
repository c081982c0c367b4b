"""Compile-only check of the rocm backend (no AMD GPU is available here): one SCons run builds
every spec in specs/ for mi250 (what `scons target=mi250` does: HIP from the rocm backend,
hipcc --offload-arch=gfx90a, one object per kernel), then the gfx90a code object inside each
GEMM and conv part's object is disassembled: the MFMA kernels must run on v_mfma instructions
(the float16 or float32 one their model's dtype asks for). The libraries export only the C API,
and where no HIP device exists create() fails with HIP's reason, and Model() with a ModelError.

5.5 minutes on the shared 2-core development machine (108 objects at 5-20 s of hipcc each, two
at a time)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import struct
import subprocess
import sys

import pytest

from ait_build.backends.rocm import mfma
from ait_build.pipeline import build_plan, find_target
from ait_build.spec.model import load_model

pytestmark = pytest.mark.hipcc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SPECS = sorted(glob.glob(os.path.join(ROOT, "specs", "*.yaml")))
MFMA_PARTS = set(mfma.PARTS["gemm"].values()) | set(mfma.PARTS["conv2d"].values())
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"


def tool(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/llvm-*/bin/{name}"))), None)
    if not found:
        pytest.skip(f"{name} not found (Debian: llvm-15, which hipcc depends on)")
    return found


@pytest.fixture(scope="module")
def builds():
    if shutil.which("hipcc") is None:
        pytest.skip("hipcc is not on PATH")
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-C", ROOT, "target=mi250", "-j2"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-8000:]
    return {load_model(s).name: (s, os.path.join(ROOT, "build", "mi250", load_model(s).name))
            for s in SPECS}


def code_object(obj: str, tmp_path) -> str:
    """The gfx90a code object of a hipcc-compiled object file (the .hip_fatbin section is a clang
    offload bundle: magic, entry count, then offset, size, triple per entry)."""
    fatbin = tmp_path / (os.path.basename(obj) + ".fatbin")
    subprocess.run([tool("llvm-objcopy"), "-O", "binary", "--only-section=.hip_fatbin", obj,
                    str(fatbin)], check=True)
    data = fatbin.read_bytes()
    assert data.startswith(BUNDLE_MAGIC), obj
    (count,), at = struct.unpack_from("<Q", data, len(BUNDLE_MAGIC)), len(BUNDLE_MAGIC) + 8
    for _ in range(count):
        offset, size, length = struct.unpack_from("<QQQ", data, at)
        triple = data[at + 24:at + 24 + length].decode()
        at += 24 + length
        if triple.endswith("gfx90a"):
            out = tmp_path / (os.path.basename(obj) + ".co")
            out.write_bytes(data[offset:offset + size])
            return str(out)
    raise AssertionError(f"{obj}: no gfx90a code object in its bundle")


def test_every_spec_builds_for_gfx90a(builds):
    for name, (_, out) in builds.items():
        lib = os.path.join(out, f"lib{name}.so")
        assert os.path.isfile(lib), name
        symbols = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True,
                                 text=True, check=True).stdout.split("\n")
        exported = sorted(line.split()[-1] for line in symbols if " T " in line)
        prefix = f"ait_{name.replace('-', '_')}_"
        assert exported == [prefix + f for f in ("build_id", "create", "destroy", "last_error",
                                                 "num_steps", "run", "time_steps")], name


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: os.path.basename(s)[:-5])
def test_gemm_and_conv_kernels_run_on_mfma(builds, spec, tmp_path):
    plan = build_plan(spec, find_target("mi250"))
    out = builds[plan.name][1]
    parts = sorted({p for k in plan.unique_kernels() for p in k.parts if p.template in MFMA_PARTS},
                   key=lambda p: p.name)
    assert parts, "every spec has a GEMM"
    instruction = mfma.INSTRUCTIONS[plan.graph.dtype].instruction
    for part in parts:
        obj = os.path.join(out, "obj", part.name + ".o")
        text = subprocess.run([tool("llvm-objdump"), "-d", code_object(obj, tmp_path)],
                              capture_output=True, text=True, check=True).stdout
        assert instruction in text, f"{part.name}: no {instruction} in its gfx90a code"


def test_create_reports_the_missing_device(builds):
    from ait_build.runtime import Model
    from ait_build.runtime.model import ModelError
    out = builds["mlp"][1]
    try:
        Model(out)
    except ModelError as exc:
        assert "no HIP device" in str(exc), exc
    else:  # an AMD GPU is present: the weights were uploaded
        pass


@pytest.mark.parametrize("group", ["CONCAT_NORMS", "LAYOUT_SWAPS", "MOVEMENT_CHAINS",
                                   "IMPORT_FAMILIES", "EXPERTS"])
def test_fused_concat_norm_and_transpose_kernels_compile_for_gfx90a(tmp_path, group):
    """The GPU layer's own kernels of tests/backends/family_ops.py's groups, in float16:
    concat + batch norm + activation, fused batch norms and a channel concat kept whole
    (concat_rows; CONCAT_NORMS), tiled transposes
    (LAYOUT_SWAPS), strided and padded copies of fused data movement (MOVEMENT_CHAINS), the
    importers' ops (IMPORT_FAMILIES: rms norms, rotary embeddings, gathers, resizes, pools), the
    grouped GEMM's own kernel (EXPERTS: rocm has no other) compile with hipcc for gfx90a (the
    GPU tests run them on the H200); the groups have no MFMA GEMM, so nothing else is
    compiled."""
    if shutil.which("hipcc") is None:
        pytest.skip("hipcc is not on PATH")
    from ait_build.backends import toolchain_for
    from ait_build.pipeline import emit
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from backends import family_ops
    from backends.cpu.helpers import write_spec
    spec = write_spec(tmp_path, group.lower(), dims={"batch": {"min": 1, "max": 8, "opt": 3}},
                      dtype="float16", **getattr(family_ops, group))
    target = find_target("mi250")
    emission = emit(spec, target, str(tmp_path / "out"))
    sources = sorted(k for k in emission.kernel_sources if k.endswith(".cu"))
    markers = {"CONCAT_NORMS": ("concat_mul_add_relu", "concat_rows"),
               "LAYOUT_SWAPS": ("transpose",), "MOVEMENT_CHAINS": ("padded_copy",),
               "IMPORT_FAMILIES": ("rotary", "rms_norm"), "EXPERTS": ("grouped_matmul",)}[group]
    assert all(any(m in s for s in sources) for m in markers), sources
    tc = toolchain_for(target)
    for source in sources:
        obj = str(tmp_path / (os.path.basename(source) + ".o"))
        proc = subprocess.run(tc.compile_command(str(tmp_path / "out" / source), obj),
                              capture_output=True, text=True, env=tc.environ())
        assert proc.returncode == 0, f"{source}:\n{proc.stderr[-4000:]}"


def test_stem_im2col_kernels_compile_for_gfx90a(tmp_path):
    """The GPU layer's im2col (templates/gpu/im2col.cu.j2), which a GPU target gathers stem
    windows with when its channel_alignment exceeds the image's channels, and its direct stem
    conv (templates/gpu/stem_conv.cu.j2, where the target sets direct_stem_outputs) compile with
    hipcc for gfx90a. mi250 itself (channel_alignment 1) runs those convs as MFMA implicit GEMMs,
    so the check renders the cuda op groups' stem convs for a copy of it with channel_alignment 8
    and direct_stem_outputs 32."""
    if shutil.which("hipcc") is None:
        pytest.skip("hipcc is not on PATH")
    from ait_build.backends import toolchain_for
    from ait_build.pipeline import emit, load_target
    sys.path.insert(0, os.path.join(ROOT, "tests", "backends", "cuda"))
    from cuda_op_groups import op_spec
    with open(os.path.join(ROOT, "targets", "mi250.yaml"), encoding="utf-8") as fh:
        text = fh.read().replace("\nname: mi250\n", "\nname: mi250_aligned\n", 1)
    aligned = tmp_path / "mi250_aligned.yaml"
    aligned.write_text(re.sub(r"channel_alignment: 1 ", "channel_alignment: 8 ", text)
                       .replace("\ncapabilities:\n", "\ncapabilities:\n  direct_stem_outputs: 32\n", 1))
    target = load_target(str(aligned))
    assert target.cap("channel_alignment") == 8
    assert find_target("mi250").cap("channel_alignment") == 1
    tc = toolchain_for(target)
    for group, dtype, kind, count in (("stem_conv", "float16", "im2col", 7),
                                      ("stem_conv", "float32", "im2col", 7),
                                      ("direct_stems", "float16", "stem_conv", 8)):
        spec = op_spec(group, dtype)
        out = tmp_path / f"{group}_{dtype}"
        emit(spec, target, str(out))
        kernels = [k for k in build_plan(spec, target).unique_kernels()
                   if k.template.endswith(f"/{kind}.cu.j2")]
        assert len(kernels) == count
        unity = out / "stems.cu"
        unity.write_text("".join(f'#include "{k.source}"\n' for k in kernels))
        proc = subprocess.run(tc.compile_command(str(unity), str(out / "stems.o")),
                              capture_output=True, text=True, env=tc.environ())
        assert proc.returncode == 0, f"{group} {dtype}:\n{proc.stderr[-4000:]}"


def test_folded_gate_kernels_compile_for_gfx90a(tmp_path):
    """Squeeze-excitation gates folded into their projections (gpu/gemm.py scaled_pointwise) on
    mi250: the kernel that scales the projection's weights per image (channel_scale.cu.j2 with
    every image reading the same rows) compiles with hipcc for gfx90a; the batched GEMM after it
    is the MFMA dispatch every GEMM of the model runs (test_every_spec_builds_for_gfx90a)."""
    if shutil.which("hipcc") is None:
        pytest.skip("hipcc is not on PATH")
    from ait_build.backends import toolchain_for
    from ait_build.pipeline import emit
    sys.path.insert(0, os.path.join(ROOT, "tests", "backends", "cuda"))
    from cuda_op_groups import op_spec
    spec, target = op_spec("squeeze_excitation"), find_target("mi250")
    out = tmp_path / "gates"
    emit(spec, target, str(out))
    steps = [s for s in build_plan(spec, target).steps if s.node in ("a_proj", "b_proj")]
    assert [s.kernel.label for s in steps] == ["scaled_weights", "gemm"] * 2
    source = str(out / steps[0].kernel.source)
    tc = toolchain_for(target)
    proc = subprocess.run(tc.compile_command(source, str(tmp_path / "scaled.o")),
                          capture_output=True, text=True, env=tc.environ())
    assert proc.returncode == 0, proc.stderr[-4000:]
