"""Programmatic dependent launch (capabilities.dependent_launch, gpu/ait_gpu.h.j2): a kernel
launched as a dependent may start while the kernel before it still runs, so every kernel that
can be launched that way must wait in ait::await_previous_kernels() before touching global
memory. These checks read the templates and the toolchain, and (with nvcc) compile kernels for
an h200 with dependent launches on; test_gpu_dependent_launch.py runs them on the GPU."""

from __future__ import annotations

import glob
import os
import re

import pytest

from ait_build.backends.cuda.toolchain import dependent_launch_defines
from ait_build.pipeline import find_target
from ait_build.spec.target import CAPABILITY_DEFAULTS

from cuda_helpers import compile_and_link, dependent_h200, fp16_spec, unity_build
from cuda_op_groups import GROUPS, op_spec

TEMPLATES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "templates")
# the profiler's own fill/compare kernels run alone on their stream, never as dependents
NOT_DEPENDENT = {"profile.cu.j2"}


def kernel_templates() -> list:
    paths = glob.glob(os.path.join(TEMPLATES, "gpu", "*.j2")) + \
        glob.glob(os.path.join(TEMPLATES, "cuda", "*.j2"))
    return sorted(p for p in paths if os.path.basename(p) not in NOT_DEPENDENT)


def kernel_bodies(text: str) -> list:
    """(name, first statement) of each __global__ function defined in `text`."""
    out = []
    for m in re.finditer(r"__global__ void", text):
        brace = text.index("{", m.end())
        while text[m.end():brace].count("(") != text[m.end():brace].count(")"):
            brace = text.index("{", brace + 1)
        head = text[m.end():brace]
        name = re.findall(r"(\w+)\s*\(", head)
        first = text[brace + 1:].strip().split("\n", 1)[0].strip()
        out.append((name[-1] if name else head.strip(), first))
    return out


def test_every_kernel_waits_for_the_previous_one_first():
    found = 0
    for path in kernel_templates():
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        for name, first in kernel_bodies(text):
            found += 1
            assert first == "ait::await_previous_kernels();", \
                f"{os.path.basename(path)}: kernel {name} starts with {first!r}"
    assert found >= 30  # the GPU layer's kernels and the CUTLASS entry points


def test_kernels_launch_through_the_dependent_launch_helpers():
    for path in kernel_templates():
        if os.path.basename(path) == "ait_gpu.h.j2":  # the helper's own plain launch
            continue
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        assert "<<<" not in text, f"{os.path.basename(path)} launches a kernel with <<<...>>>"


def test_the_finder_sees_a_kernel_that_does_not_wait():
    text = "__global__ void __launch_bounds__(128) k(int* p) {\n  p[0] = 1;\n}\n"
    assert kernel_bodies(text) == [("k", "p[0] = 1;")]


@pytest.mark.parametrize("target", ["h200", "h100"])
def test_hopper_targets_launch_dependents_for_small_calls(target):
    # measured on the H200: faster at batch 1, about 1% slower from batch 4 with CUDA graphs
    # (docs/cuda.md), so calls whose activations take more than 6 MiB launch plainly
    t = find_target(target)
    assert t.cap("dependent_launch") is True and dependent_launch_defines(t) == ("AIT_DEPENDENT_LAUNCH=1",)
    assert t.cap("dependent_launch_max_mb") == 6


def test_other_targets_do_not_build_for_dependent_launches():
    t = find_target("a100")  # no griddepcontrol before sm90
    assert t.cap("dependent_launch") is False and dependent_launch_defines(t) == ()
    assert CAPABILITY_DEFAULTS["dependent_launch"] is False
    assert CAPABILITY_DEFAULTS["dependent_launch_max_mb"] == 0


def test_the_model_source_carries_the_size_limit(tmp_path):
    """The run loop compares each call's activation bytes with the target's limit (MiB -> bytes),
    and AIT_DEPENDENT_LAUNCH=1 lifts it (bench/dependent_launch_ab.py times every size both ways)."""
    from ait_build.codegen.emit import MODEL_SOURCE, render_model, weights_layout
    from ait_build.pipeline import build_plan
    plan = build_plan(fp16_spec("tiny_cnn"), find_target("h200"))
    source = render_model(plan, weights_layout(plan))[MODEL_SOURCE]
    assert "constexpr int64_t kDependentLaunchMaxBytes = 6291456LL;" in source
    assert "act <= kDependentLaunchMaxBytes" in source
    assert 'm->dependent_any_size = dependent && std::strcmp(dependent, "1") == 0;' in source
    assert source.count("call_context(m, ") == 3  # run, its capture, time_steps
    unlimited = build_plan(fp16_spec("tiny_cnn"), find_target(dependent_h200(str(tmp_path))))
    assert "kDependentLaunchMaxBytes = 0LL;" in render_model(unlimited, weights_layout(unlimited))[MODEL_SOURCE]


def test_a_target_with_dependent_launches_builds_for_them(tmp_path):
    t = find_target(dependent_h200(str(tmp_path)))
    assert t.name == "h200_dependent" and t.cap("dependent_launch") is True
    assert dependent_launch_defines(t) == ("AIT_DEPENDENT_LAUNCH=1",)


@pytest.mark.nvcc
@pytest.mark.parametrize("model", ["tiny_vit", "tiny_cnn", "depthwise"])
def test_kernels_compile_for_dependent_launches(nvcc, tmp_path, model):
    """Our kernels and the CUTLASS entry points (tiny_vit: sm90 GEMMs, the attention; tiny_cnn:
    2.x and sm90 convs) with AIT_DEPENDENT_LAUNCH=1, as one translation unit and a library."""
    spec = op_spec(model) if model in GROUPS else fp16_spec(model)
    emission, compile_cmd, link_cmd = unity_build(spec, dependent_h200(str(tmp_path)),
                                                  str(tmp_path / "out"))
    assert "-DAIT_DEPENDENT_LAUNCH=1" in compile_cmd
    compile_and_link([(f"{model} for h200_dependent", compile_cmd, link_cmd)], 1)
