"""Batch norms that fold into no conv, built optimized for cpu (the group is CONCAT_NORMS, which
the GPU tests build too): the optimizer makes each a per-channel affine fused with its activation
(batchnorm_to_affine, fuse_elementwise) and fuses a concat along the channels into that kernel
where nothing else reads it (fuse_concat); the library matches the reference of the spec as
written at two batch sizes, in float32 and float16."""

from __future__ import annotations

import pytest

from ait_build.passes import optimize
from ait_build.pipeline import find_target
from ait_build.spec.model import load_model

from .helpers import assert_matches_spec, group_specs
from ..family_ops import CONCAT_NORMS


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    return group_specs(tmp_path_factory, "concat_norm", CONCAT_NORMS)


def test_optimizer_fuses_where_valid(spec):
    graph, report = optimize(load_model(spec["float32"]), find_target("cpu"))
    fused = {n.output: n for n in graph.nodes if n.op == "concat_elementwise"}
    assert sorted(fused) == ["dense", "many_relu", "odd_relu6", "shifted_relu"]
    assert fused["many_relu"].attrs["pieces"] == 9 and len(fused["many_relu"].inputs) == 11
    assert [step[0] for step in fused["dense"].attrs["program"]] == ["mul", "add", "relu"]
    assert [step[0] for step in fused["shifted_relu"].attrs["program"]] == ["add", "relu"]
    # the concat that is an output and the one along the rows stay, each + one fused program
    assert [n.output for n in graph.nodes if n.op == "concat"] == ["cat_kept", "cat_rows"]
    programs = {n.output for n in graph.nodes if n.op == "fused_elementwise"}
    assert programs == {"kept_relu", "rows_relu", "bn_relu6", "bn_silu", "bn_plain"}
    assert not [n for n in graph.nodes if n.op in ("batch_norm", "relu", "relu6", "silu")]
    summaries = dict(report)
    assert summaries["batchnorm_to_affine"] == "8 batch norms made per-channel affines"
    assert summaries["fuse_concat"] == "4 concats fused with the elementwise program after them"


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_fused_library_matches_reference(build_spec, spec, dtype):
    model, _, emission = build_spec(spec[dtype], name=f"concat_norm_{dtype}")
    assert any("concat_mul_add_relu" in k for k in emission.kernel_sources)
    assert_matches_spec(model, spec[dtype], dtype)
