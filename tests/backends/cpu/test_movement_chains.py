"""Chains of data movement built optimized for cpu (the group is MOVEMENT_CHAINS, which the GPU
tests build too): the optimizer makes each chain one strided_copy (passes/fuse_data_movement.py),
a strided copy or the tiled transpose where the view has no bounds and one input, else one
padded_copy pass (which also reads a concat's pieces in place of the concat);
the library matches the reference of the spec as written (every chain unfused) at two batch
sizes, in float32 and float16."""

from __future__ import annotations

import pytest

from ait_build.passes import optimize
from ait_build.pipeline import find_target
from ait_build.spec.model import load_model

from .helpers import assert_matches_spec, group_specs
from ..family_ops import MOVEMENT_CHAINS


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    return group_specs(tmp_path_factory, "movement_chains", MOVEMENT_CHAINS)


def test_optimizer_fuses_the_chains(spec):
    graph, report = optimize(load_model(spec["float32"]), find_target("cpu"))
    fused = {n.output: [s[0] for s in n.attrs["steps"]] for n in graph.nodes
             if n.op == "strided_copy"}
    assert fused == {"halves:0": ["reshape", "permute", "reshape", "slice"],
                     "right": ["reshape", "permute", "reshape", "slice", "pad"],
                     "img_pad": ["permute", "pad"], "pad_perm_slice": ["pad", "permute", "slice"],
                     "s_t_cut": ["slice", "pad"], "swap_cut": ["permute", "slice"],
                     "across": ["permute", "slice"]}
    # the shuffled halves read the concat's pieces: the concat is gone
    halves = [n for n in graph.nodes if n.output in ("halves:0", "right")]
    assert all(n.inputs == ["a", "b"] and n.attrs["concat_axis"] == 3 for n in halves)
    assert graph.node("across").inputs == ["c1", "c2"]
    assert not [n for n in graph.nodes if n.op == "concat"]
    # the output s_t is written and read by the chain after it; the reshape to [8, 9] of a
    # [12, 6] swap is no strided view: that chain stays as written
    assert [n.output for n in graph.nodes if n.op in ("permute", "reshape")] == \
        ["s_t", "s_swap", "s_flat", "s_odd"]
    assert dict(report)["fuse_data_movement"] == \
        "7 chains of 16 data-movement ops -> strided copies, 2 concats read piece by piece"


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_fused_library_matches_reference(build_spec, spec, dtype):
    model, _, emission = build_spec(spec[dtype], name=f"movement_chains_{dtype}")
    kinds = {k.rsplit("_", 1)[0] for k in emission.kernel_sources}
    assert {"src/padded_copy", "src/transpose"} <= kinds, sorted(kinds)
    assert "src/fill" not in kinds
    assert_matches_spec(model, spec[dtype], dtype)
