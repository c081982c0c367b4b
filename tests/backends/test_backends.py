"""The Backend interface: every backend package describes itself completely, its arch flags come
from the target's `arch`, and what a target declares (dtypes, kernel families) is enforced."""

from __future__ import annotations

import ast
import os

import pytest

from ait_build.backends import backend_names, get_backend
from ait_build.backends.base import Backend
from ait_build.backends.cpu.toolchain import arch_flags as cpu_arch_flags
from ait_build.backends.cuda.toolchain import arch_flags as cuda_arch_flags
from ait_build.backends.rocm.toolchain import arch_flags as rocm_arch_flags
from ait_build.codegen.render import template_path
from ait_build.errors import AitError, SpecError
from ait_build.ops.registry import all_ops
from ait_build.pipeline import build_plan, find_target, load_target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PKG = os.path.join(ROOT, "ait_build")
HEADER = "apiVersion: ait-build/v1\nkind: Target\n"


@pytest.mark.parametrize("name", backend_names())
def test_backend_describes_itself(name):
    b = get_backend(name)
    assert isinstance(b, Backend) and b.name == name
    assert set(all_ops()) - {"fused_elementwise"} <= set(b.lower)  # every op has a kernel
    for template in [b.model_template, *b.templates.values(), *b.support_files.values()]:
        assert os.path.isfile(template_path("templates/" + template)), template
    assert set(b.ctypes) == set(b.io_ctypes)
    assert all(c in b.sizeof for c in [*b.ctypes.values(), *b.io_ctypes.values()])
    assert b.on_device == (b.device != "host")
    assert b.compile_job_memory > 0
    families = {f for choices in b.kernel_families.values() for f in choices}
    assert set(b.kernel_archs) <= families  # a rule for each family that has one, and no other
    assert "float32" in b.accumulate and b.compute_dtype in b.ctypes
    assert all(b.weight_storage[d] in b.ctypes for d in b.weight_storage)
    with pytest.raises(TypeError):
        b.lower["relu"] = None  # tables are shared by every plan: read-only


def test_unknown_backend_and_template_kind():
    with pytest.raises(AitError, match="metal backend is not available"):
        get_backend("metal")
    with pytest.raises(KeyError, match="cpu backend has no 'attention_fmha'"):
        get_backend("cpu").template("attention_fmha")


def test_on_device():
    assert not get_backend("cpu").on_device
    assert get_backend("cuda").on_device and get_backend("cuda").device == "cuda"
    assert get_backend("rocm").on_device and get_backend("rocm").device == "hip"


@pytest.mark.parametrize("arch,flags", [
    ("sm_80", ("-gencode=arch=compute_80,code=[sm_80,compute_80]",)),
    ("sm_90a", ("-gencode=arch=compute_90a,code=sm_90a",)),
    ("sm_120", ("-gencode=arch=compute_120,code=[sm_120,compute_120]",)),
])
def test_cuda_arch_flags_derive_from_arch(arch, flags):
    assert cuda_arch_flags(arch) == flags


@pytest.mark.parametrize("arch", ["", "gfx90a", "sm80", "compute_80"])
def test_cuda_rejects_what_is_not_an_sm_arch(arch):
    with pytest.raises(AitError):
        cuda_arch_flags(arch)


@pytest.mark.parametrize("arch,ok", [("gfx90a", True), ("gfx942", True), ("gfx1100", True),
                                     ("gfx90a:xnack-", True), ("sm_80", False), ("", False),
                                     ("gfx", False)])
def test_rocm_arch_flags_derive_from_arch(arch, ok):
    if ok:
        assert rocm_arch_flags(arch) == (f"--offload-arch={arch}",)
    else:
        with pytest.raises(AitError, match="not an AMD GPU architecture"):
            rocm_arch_flags(arch)


def test_mi250_gets_its_offload_arch_and_hip_platform():
    target = find_target("mi250")
    toolchain = get_backend("rocm").toolchain(target)
    assert [f for f in toolchain.flags if f.startswith("--offload-arch")] == ["--offload-arch=gfx90a"]
    assert toolchain.flags[toolchain.flags.index("-x") + 1] == "hip"
    assert dict(toolchain.env)["HIP_PLATFORM"] == "amd"  # nvcc on PATH would make hipcc pick NVIDIA's
    assert toolchain.environ({"PATH": "/bin"}) == {"PATH": "/bin", "HIP_PLATFORM": "amd"}


def test_cpu_arch_flags():
    assert cpu_arch_flags("") == ()
    assert cpu_arch_flags("x86-64-v3") == ("-march=x86-64-v3",)
    with pytest.raises(AitError, match="native"):
        cpu_arch_flags("native")


@pytest.mark.parametrize("name", ["a100", "h100", "h200"])
def test_stock_cuda_targets_get_their_gencode_from_arch(name):
    target = find_target(name)
    toolchain = get_backend("cuda").toolchain(target)
    gencode = [f for f in toolchain.flags if f.startswith("-gencode")]
    assert gencode == list(cuda_arch_flags(target.arch))
    assert not [f for f in target.flags if f.startswith("-gencode")]


def test_arch_without_gencode_still_gets_arch_flags(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(HEADER + "name: t\nbackend: cuda\narch: sm_90a\ncompiler: {cxx: nvcc, flags: [-O3]}\n")
    flags = get_backend("cuda").toolchain(load_target(str(path))).flags
    assert "-gencode=arch=compute_90a,code=sm_90a" in flags


def test_flags_may_not_choose_the_arch(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(HEADER + "name: t\nbackend: cuda\narch: sm_80\n"
                    "compiler: {cxx: nvcc, flags: [-O3, -arch=sm_90]}\n")
    with pytest.raises(SpecError, match="must not choose the architecture"):
        load_target(str(path))


def test_kernel_family_typo_fails_when_the_target_loads(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(HEADER + "name: t\nbackend: cuda\narch: sm_90a\ncompiler: {cxx: nvcc}\n"
                    "kernels: {attention: fmha_sm09}\n")
    with pytest.raises(SpecError) as info:
        load_target(str(path))
    assert "did you mean 'fmha_sm90'?" in str(info.value) and "t.yaml:7:22:" in str(info.value)


def test_declared_dtypes_are_enforced(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(HEADER + "name: f32only\nbackend: cpu\ncompiler: {cxx: g++}\n"
                    "capabilities: {dtypes: [float32]}\n")
    target = load_target(str(path))
    with open(os.path.join(ROOT, "specs", "mlp.yaml"), encoding="utf-8") as fh:
        float32 = fh.read()
    spec = tmp_path / "mlp16.yaml"
    spec.write_text(float32.replace("dtype: float32", "dtype: float16"))
    with pytest.raises(AitError, match=r"computes in float16; target 'f32only' supports float32"):
        build_plan(str(spec), target)
    build_plan(os.path.join(ROOT, "specs", "mlp.yaml"), target)  # float32 builds


# -- layering: what each layer may import --------------------------------------------------------
def imports_of(path: str) -> set:
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def py_files(folder: str) -> list:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(PKG, folder))
                  for f in fs if f.endswith(".py"))


def test_codegen_imports_neither_spec_passes_backends_nor_toolchain():
    banned = ("ait_build.spec", "ait_build.passes", "ait_build.backends", "ait_build.backends.toolchain",
              "ait_build.pipeline", "ait_build.profile")
    for path in py_files("codegen"):
        bad = [m for m in imports_of(path) if m.startswith(banned)]
        assert not bad, f"{os.path.relpath(path, ROOT)} imports {bad}"


def test_no_layer_imports_private_names_of_another():
    for path in py_files(""):
        layer = os.path.relpath(path, PKG).split(os.sep)[0]
        for name in imports_of(path):
            module, _, last = name.rpartition(".")
            if last.startswith("_") and not last.startswith("__") and module.startswith("ait_build."):
                other = module.split(".")[1]
                assert other == layer.removesuffix(".py"), f"{path} imports {name}"


def test_no_backend_imports_a_module_named_after_another():
    for name in backend_names():
        for path in py_files(os.path.join("backends", name)):
            others = [m for m in imports_of(path) if any(
                m.startswith(f"ait_build.backends.{o}") for o in backend_names() if o != name)]
            assert not others, f"{path} imports {others}"


def test_no_backend_name_branches_outside_backends():
    for rel in ("runtime/model.py", "bench/run.py", "bench/cuda.py", "build/scons.py",
                "backends/toolchain.py", "spec/target.py", "codegen/plan.py", "codegen/emit.py",
                "pipeline.py"):
        with open(os.path.join(PKG, rel), encoding="utf-8") as fh:
            text = fh.read()
        for needle in ('backend == "cuda"', "backend == 'cuda'", 'backend == "cpu"',
                       'backend != "cpu"', 'backend not in ("cpu", "cuda")', '"cuda",)',
                       'as the cpu computes'):
            assert needle not in text, f"{rel}: {needle}"


def test_cuda_graphs_capability_sets_the_librarys_default(tmp_path):
    from ait_build.pipeline import emit
    spec = os.path.join(ROOT, "specs", "mlp.yaml")
    for graphs in (True, False):
        path = tmp_path / f"g{graphs}.yaml"
        path.write_text(HEADER + f"name: g\nbackend: cuda\narch: sm_80\ncompiler: {{cxx: nvcc}}\n"
                        f"capabilities: {{dtypes: [float32], cuda_graphs: {str(graphs).lower()}}}\n")
        out = tmp_path / f"out{graphs}"
        emit(spec, load_target(str(path)), str(out))
        text = (out / "src" / "model.cpp").read_text()
        assert (f"std::atomic<bool> graphs{{{str(graphs).lower()}}};" in text)
        assert ('std::strcmp(graphs, "0")' in text) == graphs
        manifest = (out / "manifest.json").read_text()
        assert '"device": "cuda"' in manifest


def test_hip_names_cover_the_gpu_layer():
    """Every CUDA runtime name the GPU layer's templates use has its HIP spelling in
    templates/gpu/include/hip_names.h (what a HIP backend includes to render them)."""
    import re
    folder = os.path.join(ROOT, "templates", "gpu")
    with open(os.path.join(folder, "include", "hip_names.h"), encoding="utf-8") as fh:
        mapped = dict(re.findall(r"^#define (cuda\w+)\s+(hip\w+)$", fh.read(), re.M))
    used = set()
    for name in os.listdir(folder):
        if name.endswith(".j2"):
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                used |= set(re.findall(r"\bcuda[A-Z]\w*", fh.read()))
    assert used and used <= set(mapped), sorted(used - set(mapped))


def test_model_templates_extend_one_base():
    from ait_build.codegen.render import template_deps
    for name in backend_names():
        deps = template_deps(get_backend(name).model_template)
        assert "templates/common/model.cpp.j2" in deps, (name, deps)


def test_gpu_layer_templates_name_no_backend():
    """templates/gpu/ extends and includes only itself and common/; the kernel header comes from
    the backend (Backend.render_globals), and cuda renders the simple kernels from them."""
    import re
    folder = os.path.join(ROOT, "templates", "gpu")
    for name in [os.path.join(d, n) for d, _, names in os.walk(folder) for n in names]:
        with open(name, encoding="utf-8") as fh:
            text = fh.read()
        refs = re.findall(r"{%-?\s*(?:extends|include|import)\s+['\"]([^'\"]+)", text)
        assert all(r.startswith(("gpu/", "common/")) for r in refs), (name, refs)
        assert "ait_cuda" not in text, name
    cuda = get_backend("cuda")
    assert "src/" + cuda.render_globals["kernel_header"] in cuda.support_files
    for kind in ("elementwise", "softmax", "layer_norm", "attention", "gemm_simple"):
        assert cuda.template(kind) == get_backend("rocm").template(kind) == f"gpu/{kind}.cu.j2"
