"""emit(): deterministic bytes, files written only when they change, plan_outputs agreeing with
emit, the shape of the generated header and manifest, kernel naming and sharing, and the
weights file being a plain safetensors file in the kernels' layout."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

import numpy as np
import pytest
from safetensors.numpy import load_file

from ait_build.backends import toolchain_for
from ait_build.codegen.render import template_path
from ait_build.errors import AitError
from ait_build.pipeline import emit, find_target, plan_outputs
from ait_build.spec.model import load_model

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPECS = os.path.join(PROJECT_ROOT, "specs")
MLP = os.path.join(SPECS, "mlp.yaml")


def read_tree(root: str) -> dict:
    out = {}
    for folder, _, files in os.walk(root):
        for f in files:
            path = os.path.join(folder, f)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root)] = fh.read()
    return out


@pytest.mark.parametrize("spec", ["mlp.yaml", "tiny_bert.yaml"])
def test_two_emits_are_byte_identical(tmp_path, cpu_target, spec):
    a = emit(os.path.join(SPECS, spec), cpu_target, str(tmp_path / "a"))
    b = emit(os.path.join(SPECS, spec), cpu_target, str(tmp_path / "deeper" / "b"))
    tree_a, tree_b = read_tree(str(tmp_path / "a")), read_tree(str(tmp_path / "deeper" / "b"))
    assert a == b
    assert sorted(tree_a) == a.files
    assert tree_a == tree_b
    for rel, data in tree_a.items():  # nothing machine- or folder-specific inside
        assert str(tmp_path).encode() not in data, rel
        assert PROJECT_ROOT.encode() not in data, rel


def test_emit_rewrites_only_changed_files(tmp_path, cpu_target):
    out = str(tmp_path / "out")
    emission = emit(MLP, cpu_target, out)
    stamps = {f: os.stat(os.path.join(out, f)).st_mtime_ns for f in emission.files}
    victim = os.path.join(out, emission.kernel_sources[0])
    with open(victim, "a") as fh:
        fh.write("// edited\n")
    edited = os.stat(victim).st_mtime_ns
    emit(MLP, cpu_target, out)
    after = {f: os.stat(os.path.join(out, f)).st_mtime_ns for f in emission.files}
    changed = [f for f in emission.files if after[f] != stamps[f]]
    assert changed == [emission.kernel_sources[0]]
    assert after[emission.kernel_sources[0]] != edited
    with open(victim) as fh:
        assert "// edited" not in fh.read()


def test_plan_outputs_matches_emit(tmp_path, cpu_target):
    planned = plan_outputs(os.path.join(SPECS, "tiny_cnn.yaml"), "cpu")
    emitted = emit(os.path.join(SPECS, "tiny_cnn.yaml"), cpu_target, str(tmp_path))
    assert planned == emitted
    assert planned.files == sorted(planned.files)
    assert planned.model_source == "src/model.cpp" and planned.header == "tiny_cnn.h"
    for src in planned.kernel_sources:
        deps = planned.template_deps[src]
        assert "templates/cpu/kernel.cpp.j2" in deps, src  # the base every kernel extends
        assert all(os.path.isfile(template_path(d)) for d in deps)
    conv = [s for s in planned.kernel_sources if "conv2d" in s]
    assert conv and "templates/cpu/_epilogue.j2" in planned.template_deps[conv[0]]


def test_header_and_manifest_shape(tmp_path, cpu_target):
    out = str(tmp_path)
    emission = emit(MLP, cpu_target, out)
    with open(os.path.join(out, "mlp.h")) as fh:
        header = fh.read()
    for line in ("typedef struct ait_mlp ait_mlp;",
                 "int ait_mlp_create(const char* weights_path, ait_mlp** out);",
                 "int ait_mlp_run(ait_mlp* m, const int64_t* dims, const void* const* inputs,",
                 "void ait_mlp_destroy(ait_mlp* m);", "const char* ait_mlp_last_error(void);",
                 "#define AIT_MLP_OK 0", "#define AIT_MLP_ERROR_WEIGHTS 3",
                 "#define AIT_MLP_NUM_DIMS 1", " *   0: x float32 [batch, 32]",
                 " *   0: softmax float32 [batch, 16]", " *   0: batch in [1, 64]"):
        assert line in header, line
    with open(os.path.join(out, "manifest.json")) as fh:
        text = fh.read()
    manifest = json.loads(text)
    assert text == json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    assert manifest["name"] == "mlp" and manifest["target"] == "cpu" and manifest["backend"] == "cpu"
    assert manifest["dims"] == [{"name": "batch", "min": 1, "max": 64, "opt": 8}]
    assert manifest["inputs"] == [{"name": "x", "dtype": "float32", "shape": ["batch", 32]}]
    assert manifest["outputs"] == [{"name": "softmax", "dtype": "float32", "shape": ["batch", 16]}]
    assert [k["source"] for k in manifest["kernels"]] == emission.kernel_sources
    for k in manifest["kernels"]:
        with open(os.path.join(out, k["source"]), "rb") as fh:
            assert hashlib.sha256(fh.read()).hexdigest() == k["sha256"]
    # every other generated source but the build id's own, by hash (the model source holds each
    # call's configuration, the support headers the kernels' shared code)
    generated = [f for f in emission.files if f.startswith("src/") or f.endswith(".h")]
    assert sorted(manifest["sources"]) == sorted(
        set(generated) - set(emission.kernel_sources) - {"src/build_id.cpp"})
    assert "src/model.cpp" in manifest["sources"] and "mlp.h" in manifest["sources"]
    for path, sha in manifest["sources"].items():
        with open(os.path.join(out, path), "rb") as fh:
            assert hashlib.sha256(fh.read()).hexdigest() == sha, path
    assert manifest["weights"]["file"] == "weights.safetensors"
    assert manifest["weights"]["bytes"] == os.path.getsize(os.path.join(out, "weights.safetensors"))
    assert manifest["compiler"]["cxx"] == "g++" and manifest["compiler"]["version"]
    assert manifest["workspace_bytes"] > 0 and manifest["memory_plan"] == "optimizer"


def test_a_changed_model_source_changes_the_build_id(tmp_path, cpu_target, monkeypatch):
    """A build that differs only in the model source (another configuration for a call, as a
    changed profile gives) is another build: its manifest and build_id differ."""
    from ait_build.codegen import emit as emit_module
    render_model = emit_module.render_model
    ids = []
    for extra in ("", "// another configuration\n"):
        def changed(plan, wl, extra=extra):
            out = render_model(plan, wl)
            out["src/model.cpp"] += extra
            return out
        monkeypatch.setattr(emit_module, "render_model", changed)
        out = str(tmp_path / f"v{len(ids)}")
        emit(MLP, cpu_target, out)
        with open(os.path.join(out, "manifest.json")) as fh:
            ids.append(json.load(fh)["build_id"])
    assert ids[0] != ids[1]


def test_weights_file_holds_the_kernel_layout(tmp_path, cpu_target):
    emit(MLP, cpu_target, str(tmp_path))
    stored = load_file(str(tmp_path / "weights.safetensors"))
    graph = load_model(MLP)
    # linear weights are stored transposed ([in, out]) so the GEMM reads B untransposed
    np.testing.assert_array_equal(stored["fc1.weight@kn"], graph.weights.get("fc1.weight").T)
    np.testing.assert_array_equal(stored["fc1.bias"], graph.weights.get("fc1.bias"))


def test_equal_layers_share_kernels(cpu_target):
    emission = plan_outputs(os.path.join(SPECS, "tiny_bert.yaml"), cpu_target)
    from ait_build.pipeline import build_plan
    plan = build_plan(os.path.join(SPECS, "tiny_bert.yaml"), cpu_target)
    # two encoder layers, every kernel of the second is one of the first's
    assert len(plan.steps) > len(emission.kernel_sources) + 5
    names = [k.rsplit("/", 1)[1][:-4] for k in emission.kernel_sources]
    assert len(set(names)) == len(names)
    assert all(n.rsplit("_", 1)[1].isalnum() and len(n.rsplit("_", 1)[1]) == 8 for n in names)


def test_every_stock_backend_plans_and_a_missing_compiler_says_what_to_install(tmp_path):
    assert plan_outputs(MLP, find_target("mi250")).kernel_sources  # rocm: HIP sources
    import dataclasses
    broken = dataclasses.replace(find_target("cpu"), cxx="no-such-g++")
    with pytest.raises(AitError, match="not on PATH: install .*g\\+\\+"):
        toolchain_for(broken)


def test_missing_blas_says_what_to_install(monkeypatch):
    import sys

    from ait_build.backends.cpu import toolchain
    toolchain.find_openblas.cache_clear()
    monkeypatch.setitem(sys.modules, "scipy_openblas32", None)  # import fails
    try:
        with pytest.raises(AitError, match="pip install scipy-openblas32"):
            toolchain_for(find_target("cpu_openblas"))
    finally:
        toolchain.find_openblas.cache_clear()


def test_missing_mkl_and_mixed_blas_are_errors(monkeypatch, tmp_path):
    import dataclasses
    import sys

    from ait_build.backends.cpu import toolchain
    target = find_target("cpu_mkl")
    toolchain.find_mkl.cache_clear()
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # a prefix without the mkl-devel wheel
    monkeypatch.setattr(toolchain.site, "getuserbase", lambda: str(tmp_path / "user"))
    try:
        with pytest.raises(AitError, match="has no mkl_cblas.h: pip install mkl-devel"):
            toolchain_for(target)
        # `pip install --user mkl-devel`: the wheel's files under the user's base
        user = tmp_path / "user"
        (user / "include").mkdir(parents=True)
        (user / "include" / "mkl_cblas.h").write_text("")
        (user / "lib").mkdir()
        for layer in toolchain.MKL_LAYERS:
            (user / "lib" / f"lib{layer}.so.2").write_text("")
        toolchain.find_mkl.cache_clear()
        blas = toolchain.find_mkl()
        assert blas.include_dir == str(user / "include") and blas.lib_dir == str(user / "lib")
        assert blas.libs == tuple(f":lib{layer}.so.2" for layer in toolchain.MKL_LAYERS)
    finally:
        toolchain.find_mkl.cache_clear()
    mixed = dataclasses.replace(target, kernels=(("conv2d", "im2col_openblas"), ("gemm", "mkl")))
    with pytest.raises(AitError, match="name different BLAS libraries; use conv2d: im2col_mkl"):
        toolchain_for(mixed)


def test_cpu_target_takes_mkl_where_installed_else_openblas(monkeypatch, tmp_path):
    """kernels.gemm `auto` (the stock cpu target): MKL where its header is installed and the
    compiler builds for x86-64; OpenBLAS without it, or for another machine."""
    import sys

    from ait_build.backends.cpu import toolchain
    target = find_target("cpu")
    assert target.kernel("gemm") == "auto"
    include = tmp_path / "include"
    include.mkdir()
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # a prefix without the mkl-devel wheel
    monkeypatch.setattr(toolchain.site, "getuserbase", lambda: str(tmp_path / "user"))
    monkeypatch.setattr(toolchain, "find_mkl", lambda: "mkl")
    monkeypatch.setattr(toolchain, "find_openblas", lambda: "openblas")
    monkeypatch.setattr(toolchain, "compiler_machine", lambda cxx: "x86_64-linux-gnu")
    assert toolchain.find_blas(target) == "openblas"
    (include / "mkl_cblas.h").write_text("")  # the wheel's header: MKL is installed
    assert toolchain.find_blas(target) == "mkl"
    monkeypatch.setattr(toolchain, "compiler_machine", lambda cxx: "aarch64-linux-gnu")
    assert toolchain.find_blas(target) == "openblas"


def test_cpu_target_with_mkl_installed_links_it(monkeypatch, tmp_path):
    """With the mkl-devel wheel in the environment the stock cpu target's command lines link
    MKL's layers and define AIT_MKL (the packed-weights path), as cpu_mkl's do."""
    from ait_build.backends.cpu import toolchain
    try:
        mkl = toolchain.find_mkl()
    except AitError as exc:
        pytest.skip(str(exc))
    if not toolchain.compiler_machine("g++").startswith("x86_64"):
        pytest.skip("MKL is taken on x86-64 only")
    chain = toolchain_for(find_target("cpu"))
    assert "AIT_MKL" in chain.defines and chain.libs == mkl.libs
    assert dict(chain.libraries) == dict(toolchain_for(find_target("cpu_mkl")).libraries)


def test_place_keeps_live_groups_apart():
    from ait_build.ir.placement import place
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(1, 30))
        sizes = [int(s) * 64 for s in rng.integers(1, 100, n)]
        starts = rng.integers(0, 20, n)
        lifetimes = [(int(s), int(s + rng.integers(0, 6))) for s in starts]
        offsets, top = place(sizes, lifetimes)
        assert top == max(o + s for o, s in zip(offsets, sizes))
        for a in range(n):
            for b in range(a):
                live_together = lifetimes[a][0] <= lifetimes[b][1] and lifetimes[b][0] <= lifetimes[a][1]
                apart = offsets[a] + sizes[a] <= offsets[b] or offsets[b] + sizes[b] <= offsets[a]
                assert apart or not live_together


def test_workspace_follows_the_dims_given(cpu_target):
    """BERT-base's max dims (batch 256, seq 4096) need GiBs; batch 1 must not pay for them: the
    offsets are placed at run time, with the plan's in-place sharing."""
    from ait_build.pipeline import build_plan
    plan = build_plan(os.path.join(SPECS, "bert_base.yaml"), cpu_target)
    assert plan.workspace_bytes("max") > 8 * 2**30
    assert plan.workspace_bytes("min") < 4 * 2**20
    shared = [g for g in plan.layout.groups if len(g.tensors) > 1]
    assert shared and not plan.notes  # the optimizer's in-place reuses are all kept


def test_weights_override_reaches_the_weights_file(tmp_path, cpu_target):
    from safetensors.numpy import save_file
    graph = load_model(MLP)
    values = {name: np.full(graph.weights.specs[name][0], 0.25, np.float32)
              for name in graph.weight_names()}
    save_file(values, str(tmp_path / "w.safetensors"))
    emit(MLP, cpu_target, str(tmp_path / "out"), weights=str(tmp_path / "w.safetensors"))
    stored = load_file(str(tmp_path / "out" / "weights.safetensors"))
    np.testing.assert_array_equal(stored["fc2.weight@kn"], values["fc2.weight"].T)


SCALAR_PARAMETER = """apiVersion: ait-build/v1
kind: Model
name: scaled
inputs:
  x: {shape: [2, 4]}
graph:
  - {name: scale, op: parameter, shape: []}
  - {name: out, op: mul, inputs: [x, scale]}
outputs: [out]
"""


def test_a_rank_0_parameter_stays_rank_0(tmp_path, cpu_target):
    """A scalar nn.Parameter (CLIP's logit_scale) is a weight of shape []: NumPy's
    ascontiguousarray made it [1], which the build refused as an internal error."""
    from safetensors.numpy import save_file
    spec = tmp_path / "scaled.yaml"
    spec.write_text(SCALAR_PARAMETER)
    emit(str(spec), cpu_target, str(tmp_path / "random"))
    assert load_file(str(tmp_path / "random" / "weights.safetensors"))["scale"].shape == ()
    save_file({"scale": np.array(3.0, np.float32)}, str(tmp_path / "w.safetensors"))
    emit(str(spec), cpu_target, str(tmp_path / "file"), weights=str(tmp_path / "w.safetensors"))
    assert load_file(str(tmp_path / "file" / "weights.safetensors"))["scale"] == 3.0


def test_a_folder_that_cannot_be_written_is_one_error(tmp_path, cpu_target):
    """A read-only or blocked build folder is the user's to fix: an AitError naming the file
    (SCons prints it as one line), not an internal error."""
    blocked = tmp_path / "build"
    blocked.write_text("a file where the build folder should be")
    with pytest.raises(AitError, match=r"cannot write .*/build/manifest.json"):
        emit(MLP, cpu_target, str(blocked))
    if os.geteuid() != 0:  # root writes anywhere: only another user sees a read-only folder
        folder = tmp_path / "readonly"
        folder.mkdir(mode=0o555)
        with pytest.raises(AitError, match="cannot write .*Permission denied"):
            emit(MLP, cpu_target, str(folder))


def test_header_comments_cannot_be_closed_by_text():
    from ait_build.codegen.render import c_comment
    for text in ("a*/b", "*\\/", "/*/", "x*/*/y", "line\nbreak\\"):
        safe = c_comment(text)
        assert "*/" not in safe and "/*" not in safe and "\n" not in safe and "\\" not in safe


def test_the_build_names_softmaxes_of_attention_left_unfused(tmp_path):
    """emit's `unfused` line (printed by SCons per model): a softmax over matmul scores that the
    attention fusion did not take (here its probabilities are an output too, so it cannot);
    none for a model whose attention fused, or for a target that does not fuse attention."""
    spec = tmp_path / "scores.yaml"
    spec.write_text("""\
apiVersion: ait-build/v1
kind: Model
name: scores
dims: {batch: {min: 1, max: 4, opt: 2}}
inputs: {q: {shape: [batch, 2, 5, 8]}, k: {shape: [batch, 2, 5, 8]}}
graph:
  - {name: qk, op: matmul, inputs: [q, k], transpose_b: true}
  - {name: scaled, op: mul, scalar: 0.35}
  - {name: probs, op: softmax, axis: -1}
outputs: [probs]
""")
    note = plan_outputs(str(spec), find_target("h200")).unfused
    assert note.startswith("1 softmaxes over matmul scores are not fused") and note.endswith("probs")
    assert plan_outputs("specs/bert_base.yaml", find_target("h200")).unfused == ""
    assert plan_outputs(str(spec), find_target("mi250")).unfused.startswith("1 softmaxes")
    unfusing = find_target("cpu")
    unfusing = dataclasses.replace(unfusing, capabilities=tuple(sorted(
        dict(unfusing.capabilities, fused_attention=False).items())))
    assert plan_outputs(str(spec), unfusing).unfused == ""
