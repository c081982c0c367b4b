"""An imported model plans the kernels of its hand-written spec: the importer's output must run
at the spec's speed, so strided copies (permute, slice) and unfused adds it leaves behind fail
here. Plans only (build_plan for h200): no compiler needed. The one difference allowed is the
input permute from the source's NCHW image to our NHWC conv."""

from __future__ import annotations

import os
from collections import Counter

import pytest

torch = pytest.importorskip("torch")

from ait_build.importers.from_torch import import_torch  # noqa: E402
from ait_build.importers.options import dims_for, parse_dim, parse_input  # noqa: E402
from ait_build.importers.simplify import simplify  # noqa: E402
from ait_build.importers.write import write_spec  # noqa: E402
from ait_build.pipeline import build_plan, find_target  # noqa: E402

pytestmark = pytest.mark.torch
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _import(factory, input_text, dim_text, out_dir, name, dtype="float32"):
    inputs = [parse_input(input_text)]
    dims = dims_for(inputs, [parse_dim(dim_text)])
    graph = import_torch(factory, None, inputs, dims, name, dtype)
    simplify(graph)
    spec, _, _ = write_spec(graph, os.path.join(str(out_dir), f"{name}.yaml"), "test import")
    return spec


def _kernels(spec) -> Counter:
    return Counter(step.kernel.label for step in build_plan(spec, find_target("h200")).steps)


def test_small_vit_attention_is_packed_with_no_copies(tmp_path):
    """nn.MultiheadAttention's q/k/v selects, head views and seq-first transposes cost nothing:
    one packed attention per layer reading the in_proj GEMM, out_proj taking the residual."""
    spec = _import("tests.importers.zoo:vit", "x:batch,3,16,16", "batch=1:4:1", tmp_path, "vit")
    text = open(spec).read()
    assert "packed: true" in text, text
    kernels = _kernels(spec)
    assert kernels["short_transpose"] == 1, kernels  # the input image, NCHW -> NHWC
    assert kernels["slice"] == 1, kernels  # the class token, x[:, 0]
    assert kernels["fmha"] + kernels["attention"] == 2, kernels  # head_dim 8: not fmha
    assert kernels["add"] == 1, kernels  # the position embedding


def test_vit_b16_plans_the_hand_written_kernels(tmp_path):
    spec = _import("bench.import_models:vit_b16", "image:batch,3,224,224", "batch=1:256:64",
                   tmp_path, "vit_b16", "float16")
    imported = _kernels(spec)
    imported.subtract({"short_transpose": 1})  # the input image, NCHW -> NHWC
    assert +imported == _kernels(os.path.join(ROOT, "specs", "vit_b16.yaml"))
