"""Compile-only check of the cuda backend: the generated sources of a GEMM model (mlp, float32:
3xTF32 CUTLASS GEMMs), of a conv + attention model (tiny_vit in float16: CUTLASS conv and
GEMMs, the fused attention, layer norms, copies), of the clamps, comparisons, masks, fills and
rolls the importers need (cuda_op_groups' masks_and_clamps, float16), of the ops the importers'
model families added (import_families: gather_elements, sin/cos/log/ceil/abs/sign, ceil_mode
pools, resize2d) and of the bandwidth-bound families' own kernels (the depthwise and
pools_and_scales groups: every tile, channel slice and vector width of their tests) and the
fused concat + batch norm + activation kernels (concat_norms), the tiled transposes
(layout_swaps), the fused chains of data movement (movement_chains) and the stem convs' im2col
kernels (stem_conv, alone: no CUTLASS) compile with
nvcc for a100 (sm_80 + compute_80 PTX) and h200 (sm_90a), and link into a library that exports
only the C API. Where no GPU is present, create() must fail with a message (CUDA errors become
codes, never aborts). Only the selected cases are built (`-k depthwise` compiles no CUTLASS).

Each (model, target) is one translation unit including every kernel, so the CUTLASS headers are
parsed four times instead of once per kernel; two compilers run at a time. One more kernel, a
float16 GEMM with float16 accumulation (precision.accumulate) for a100, is compiled on its own:
its dispatch and the part of each configuration it holds (its sm90 twin for h200 builds too,
about 100 s and 4 GB by hand: docs/cuda.md)."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from ait_build.backends import toolchain_for
from ait_build.pipeline import build_plan, emit, find_target
from cuda_helpers import (c_create, compile_and_link, fp16_spec,
                          fp16acc_target, run_checked, spec_path, unity_build)
from cuda_op_groups import GROUPS, op_spec

pytestmark = pytest.mark.nvcc

CASES = [(model, target) for model in ("mlp", "tiny_vit", "masks_and_clamps", "import_families",
                                        "depthwise", "pools_and_scales", "concat_norms",
                                        "layout_swaps", "movement_chains", "experts")
         for target in ("a100", "h200")]


@pytest.fixture(scope="module")
def libraries(nvcc, request, tmp_path_factory):
    params = [item.callspec.params for item in request.session.items
              if item.module is request.module and hasattr(item, "callspec")]
    selected = {(p["model"], p["target"]) for p in params if "model" in p}
    built, jobs = {}, []
    for model, target in (c for c in CASES if c in selected):
        spec = spec_path(model) if model == "mlp" else \
            op_spec(model) if model in GROUPS else fp16_spec(model)
        out = str(tmp_path_factory.mktemp(f"{model}_{target}"))
        emission, compile_cmd, link_cmd = unity_build(spec, target, out)
        built[(model, target)] = (out, emission)
        jobs.append((f"{model} for {target}", compile_cmd, link_cmd))
    compile_and_link(jobs, 2)
    return built


@pytest.mark.parametrize("model,target", CASES)
def test_library_exports_only_the_c_api(libraries, model, target):
    out, emission = libraries[(model, target)]
    assert any(k.endswith(".cu") for k in emission.kernel_sources)
    lib = os.path.join(out, f"lib{emission.name}.so")
    symbols = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True,
                             text=True, check=True).stdout.split("\n")
    exported = sorted(line.split()[-1] for line in symbols if " T " in line)
    prefix = f"ait_{emission.name}_"
    assert exported == [prefix + f for f in ("build_id", "create", "destroy", "last_error",
                                             "num_steps", "run", "time_steps")]


@pytest.mark.parametrize("model,target", CASES)
def test_create_reports_instead_of_aborting(libraries, model, target):
    out, emission = libraries[(model, target)]
    lib = os.path.join(out, f"lib{emission.name}.so")
    rc, message = c_create(lib, emission.name, os.path.join(out, "weights.safetensors"))
    if rc == 0:  # a GPU is present: the weights were uploaded
        assert message == ""
    else:
        assert rc == 4 and "CUDA" in message, message  # ERROR_RUNTIME with CUDA's own words


def test_float16_accumulating_gemm_compiles_for_a100(nvcc, tmp_path):
    """The gemm group's linear with residual and GELU, accumulating in half_t on the sm80
    mainloop and converted to the float32 epilogue: its dispatch and each configuration's part
    (a source of its own) compile, and the parts define every function the dispatch calls
    (about 45 s of nvcc on 2 cores, two compilers at a time)."""
    target = find_target(fp16acc_target("a100", str(tmp_path)))
    out = tmp_path / "out"
    emission = emit(op_spec("gemm"), target, str(out))
    (dispatch,) = [k for k in build_plan(op_spec("gemm"), target).unique_kernels()
                   if k.label == "gemm_gelu" and k.parts]
    assert dispatch.source in emission.kernel_sources
    assert dispatch.parts and all(p.source in emission.kernel_sources for p in dispatch.parts)
    for part in dispatch.parts:
        text = (out / part.source).read_text()
        assert "using ElementAccumulator = cutlass::half_t;" in text, part.source
    tc = toolchain_for(target)
    objects = {k.name: str(tmp_path / f"{k.name}.o") for k in (dispatch, *dispatch.parts)}

    def compile_one(kernel):
        run_checked(tc.compile_command(str(out / kernel.source), objects[kernel.name]),
                    f"compiling {kernel.source} for a100")

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(compile_one, (dispatch, *dispatch.parts)))
    called = {s for s in symbols(objects[dispatch.name], "--undefined-only")
              if any(p.name in s for p in dispatch.parts)}
    defined = {s for p in dispatch.parts for s in symbols(objects[p.name], "--defined-only")}
    assert len(called) == len(dispatch.parts) and called <= defined, (called, defined)


def symbols(obj: str, which: str) -> set:
    """The (mangled) symbol names `nm` lists for an object file, undefined or defined ones."""
    listing = subprocess.run(["nm", which, obj], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in listing.stdout.splitlines() if line.strip()}


@pytest.mark.parametrize("target_name", ["a100", "h200"])
def test_narrow_configurations_compile(nvcc, tmp_path, target_name):
    """The tiles for few channels, which the estimate may pick without a profile
    (configs.SM80_CONV_NARROW, SM80_NARROW and on Hopper SM90_NARROW): tiny_cnn in float16 with
    a profile naming each of them at an extent of its own for its 3x3 conv and 1x1 GEMM over 8
    and 16 channels, so their kernels hold them; each part compiles on its own (a few minutes of
    nvcc on 2 cores for h200)."""
    from ait_build.backends.cuda.configs import SM80_CONV_NARROW, SM80_NARROW, SM90_NARROW
    from test_tuning import entry, target_with_profile
    conv = ("conv2d float16 act=relu align=8,8,8",
            "h=16 w=16 c=8 ho=8 wo=8 o=8 kh=3 kw=3 sh=2 sw=2 ph=1 pw=1 dh=1 dw=1")
    gemm = ("gemm float16 b=col act=relu align=8,8,8", "n=8 k=16 l=1")
    gemms = SM80_NARROW + (SM90_NARROW if target_name == "h200" else ())
    entries = [entry(conv, i + 1, c.name) for i, c in enumerate(SM80_CONV_NARROW)]
    entries += [entry(gemm, i + 1, c.name) for i, c in enumerate(gemms)]
    target = find_target(target_with_profile(tmp_path, entries, target_name))
    out = tmp_path / "out"
    emit(fp16_spec("tiny_cnn"), target, str(out))
    wanted = {c.context for c in SM80_CONV_NARROW + gemms}
    parts = {p.name: p for k in build_plan(fp16_spec("tiny_cnn"), target).unique_kernels()
             if k.label in ("conv2d_relu", "gemm_relu") for p in k.parts
             if any(set(context) <= set(p.context) for context in wanted)}
    assert len(parts) == len(SM80_CONV_NARROW) + len(gemms), sorted(parts)
    compile_parts(target, out, parts.values(), tmp_path)


def compile_parts(target, out, parts, obj_dir) -> None:
    """Compiles each configuration part emitted under `out` on its own, two at a time."""
    tc = toolchain_for(target)

    def compile_one(part):
        run_checked(tc.compile_command(str(out / part.source), str(obj_dir / f"{part.name}.o")),
                    f"compiling {part.source} for {target.name}")

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(compile_one, parts))


def test_64_row_hopper_convs_compile(nvcc, tmp_path):
    """The Hopper convs with 64-row tiles, which only a profile picks (configs.SM90_CONVS, not
    `estimated`): the conv_large op group for h200 with a profile naming each of them for its
    3x3 conv, so that its kernel holds them; each part compiles on its own (about a minute of
    nvcc each on 2 cores)."""
    from ait_build.backends.cuda.configs import SM90_CONVS
    from ait_build.codegen.tuning import tunables
    from test_tuning import entry, target_with_profile
    spec = op_spec("conv_large")
    first = next(c.tunable for _, c in tunables(build_plan(spec, find_target("h200"), tune=False)))
    small = [c for c in SM90_CONVS if c.tile[0] == 64]
    entries = [entry((first.family, first.problem_text), i + 1, c.name) for i, c in enumerate(small)]
    target = find_target(target_with_profile(tmp_path, entries, "h200"))
    out = tmp_path / "out"
    emit(spec, target, str(out))
    wanted = {c.context for c in small}
    parts = {p.name: p for k in build_plan(spec, target).unique_kernels() for p in k.parts
             if any(set(context) <= set(p.context) for context in wanted)}
    assert len(parts) == len(small), sorted(parts)
    compile_parts(target, out, parts.values(), tmp_path)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_direct_stem_kernels_compile(nvcc, tmp_path, dtype):
    """The direct_stems group's convs on the h200 (`direct_stem_outputs: 32`,
    templates/gpu/stem_conv.cu.j2) compile for sm_90a in one translation unit, and their PTX
    stores a pixel's outputs with 16-byte stores (the per-output stores stay for unaligned
    pointers)."""
    t = find_target("h200")
    spec = op_spec("direct_stems", dtype)
    out = tmp_path / "out"
    emit(spec, t, str(out))
    kernels = [k for k in build_plan(spec, t).unique_kernels() if k.template.endswith("stem_conv.cu.j2")]
    assert len(kernels) == 8  # every conv of the group, none as im2col + GEMM
    unity = out / "stems.cu"
    unity.write_text("".join(f'#include "{k.source}"\n' for k in kernels))
    command = toolchain_for(t).compile_command(str(unity), str(tmp_path / "stems.o"))
    run_checked(command, "compiling the direct stem kernels")
    arch = next(a for a in command if a.startswith("-gencode="))
    ptx = [a for a in command if not a.startswith("-gencode=")]
    ptx[ptx.index("-c")] = "-ptx"
    ptx[-1] = str(tmp_path / "stems.ptx")
    ptx.insert(1, "-arch=" + arch.split("arch=")[1].split(",")[0])
    run_checked(ptx, "the direct stem kernels' PTX")
    entries = (tmp_path / "stems.ptx").read_text().split(".entry")[1:]
    assert len(entries) == 2 * len(kernels)  # vector and per-output instantiations
    assert sum("st.global.v4" in e for e in entries) == len(kernels)


@pytest.mark.parametrize("target,dtype", [("a100", "float16"), ("h200", "float16"),
                                          ("h200", "float32")])
def test_stem_im2col_kernels_compile(nvcc, tmp_path, target, dtype):
    """The stem_conv group's im2col kernels (templates/gpu/im2col.cu.j2: seven windows; nine with
    `im2col_channels`) compile for the target in one translation unit (each kernel has its own
    namespace), and their PTX writes rows with 16-byte stores (the per-element stores stay for
    unaligned slots)."""
    t = find_target(target)
    spec = op_spec("stem_conv", dtype)
    out = tmp_path / "out"
    emit(spec, t, str(out))
    kernels = [k for k in build_plan(spec, t).unique_kernels() if k.label == "im2col"]
    assert len(kernels) == (9 if t.cap("im2col_channels") else 7)  # + the two over 16 channels
    unity = out / "im2col.cu"
    unity.write_text("".join(f'#include "{k.source}"\n' for k in kernels))
    command = toolchain_for(t).compile_command(str(unity), str(tmp_path / "im2col.o"))
    run_checked(command, f"compiling the im2col kernels for {target}")
    arch = next(a for a in command if a.startswith("-gencode="))
    ptx = [a for a in command if not a.startswith("-gencode=")]
    ptx[ptx.index("-c")] = "-ptx"
    ptx[-1] = str(tmp_path / "im2col.ptx")
    ptx.insert(1, "-arch=" + arch.split("arch=")[1].split(",")[0])
    run_checked(ptx, f"the im2col kernels' PTX for {target}")
    text = (tmp_path / "im2col.ptx").read_text()
    entries = text.split(".entry")[1:]  # each kernel's aligned and per-element instantiations
    assert len(entries) == 2 * len(kernels)
    assert sum("st.global.v4.u32" in e for e in entries) == len(kernels)
