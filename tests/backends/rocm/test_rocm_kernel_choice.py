"""What the rocm backend renders for each spec (no compiler needed): GEMMs and non-grouped convs
go to the MFMA parts through the GPU layer's dispatches, attention to the GPU layer's fused
kernel, and no source includes a CUDA header or CUTLASS (every CUDA runtime name reaches HIP
through hip_names.h; the shared conv dispatch's comments still speak of cuda's Hopper kernels,
which keeps cuda's output byte-identical)."""

from __future__ import annotations

import glob
import os

import pytest

from ait_build.backends.rocm import mfma
from ait_build.pipeline import build_plan, emit, find_target

from . import skip_without_hipcc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SPECS = sorted(glob.glob(os.path.join(ROOT, "specs", "*.yaml")))


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: os.path.basename(s)[:-5])
def test_kernels_and_sources(spec, tmp_path):
    target = find_target("mi250")
    plan = build_plan(spec, target)
    kernels = plan.unique_kernels()
    by_template = {}
    for k in kernels:
        by_template.setdefault(k.template, []).append(k)
        for part in k.parts:
            by_template.setdefault(part.template, []).append(part)
    assert "gpu/gemm.cu.j2" in by_template  # every spec has a GEMM-shaped op
    for dispatch in by_template["gpu/gemm.cu.j2"] + by_template.get("gpu/conv2d.cu.j2", []):
        assert {p.template for p in dispatch.parts} <= set(mfma.PARTS[dispatch.op].values())
        assert len(dispatch.parts) == len(mfma.CONFIGS)  # both tiles fit 64 KiB of LDS
    if any(n.op == "multi_head_attention" for n in plan.graph.nodes):
        assert "gpu/attention.cu.j2" in by_template
    assert not any(t.startswith("cuda/") for t in by_template)
    skip_without_hipcc()  # emit records the compiler's version in the manifest
    emission = emit(spec, target, str(tmp_path))
    for rel in emission.kernel_sources + [emission.model_source]:
        text = (tmp_path / rel).read_text()
        includes = [line for line in text.split("\n") if line.startswith("#include")]
        assert not [i for i in includes if "cuda" in i or "cutlass" in i], (rel, includes)
    assert '"device": "hip"' in (tmp_path / "manifest.json").read_text()
    model = (tmp_path / "src" / "model.cpp").read_text()
    assert "no HIP device" in model and 'getenv("AIT_HIP_GRAPHS")' in model
