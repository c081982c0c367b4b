"""Profiled kernel choice (codegen/tuning.py), without a compiler or GPU: a build reads the
target's profile file, gives each GEMM/conv kernel exactly the configurations its calls use,
and passes each call the configuration measured for the bucket holding its run-time extent;
calls without an entry run the estimate's choice (backends/cuda/estimate.py) or, where there is
none (here: a target without the device facts it reads), the heuristic (config -1), and the
build says how many."""

from __future__ import annotations

import os
import re

import pytest

from ait_build.codegen.tuning import selector, tunables
from ait_build.errors import SpecError
from ait_build.ir.dims import Dim
from ait_build.pipeline import build_plan, emit, find_target
from ait_build.spec.profile import read_profile

from cuda_helpers import ROOT, spec_path

BERT_QKV = ("gemm float16 b=col act=none align=8,8,8", "n=2304 k=768 l=1")
BERT_FFN = ("gemm float16 b=col act=gelu align=8,8,8", "n=3072 k=768 l=1")


def target_with_profile(tmp_path, entries: list, name: str = "h200", estimate: bool = False) -> str:
    """targets/<name>.yaml copied under tmp_path, with profiles/<name>.yaml holding `entries`;
    without `estimate` the copy lacks the HBM bandwidth the estimate reads, so calls without an
    entry run the heuristic (what these tests check besides the profile)."""
    os.makedirs(tmp_path / "targets", exist_ok=True)
    path = str(tmp_path / "targets" / f"{name}.yaml")
    with open(os.path.join(ROOT, "targets", f"{name}.yaml"), encoding="utf-8") as fh:
        lines = fh.readlines()
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(line for line in lines if estimate or not line.strip().startswith("hbm_tbps:"))
    lines = ["apiVersion: ait-build/v1", "kind: Profile", f"target: {name}", "entries:"]
    lines += [f"  - {e}" for e in entries] or ["  []"]
    os.makedirs(tmp_path / "profiles", exist_ok=True)
    (tmp_path / "profiles" / f"{name}.yaml").write_text("\n".join(lines) + "\n")
    return path


def entry(key, extent, config) -> str:
    return (f'{{family: "{key[0]}", problem: "{key[1]}", extent: {extent}, config: {config}, '
            f'us: 1.0, heuristic_us: 2.0, candidates: 19}}')


def test_selector_picks_the_smallest_measured_extent_at_or_above():
    m = Dim.of("batch") * 128
    assert selector(m, [(128, 3)]) == "3"
    text = selector(m, [(128, 3), (4096, 3), (32768, 0)])  # neighbours with one choice merge
    assert text == "(128*d_batch <= 4096 ? 3 : 0)"
    assert selector(m, [(128, 2), (4096, 5), (32768, 0)]) == \
        "(128*d_batch <= 128 ? 2 : (128*d_batch <= 4096 ? 5 : 0))"


def test_without_a_profile_every_call_runs_the_heuristic(tmp_path):
    plan = build_plan(spec_path("bert_base"), find_target(target_with_profile(tmp_path, [])))
    report = plan.tuning
    assert report.calls == 48 and report.profiled == 0  # 4 GEMMs a layer, 12 layers
    assert "48 of 48 GEMM/conv calls have no entry" in report.summary()
    gemms = [s for s in plan.steps if s.kernel.label.startswith("gemm")]
    assert gemms and all(s.args[-1] == "-1" for s in gemms)
    # the heuristic's kernels: Hopper's 128x256 tile, then the two sm80 tiles (as before
    # profiling), each a part of its own
    parts = gemms[0].kernel.parts
    assert [p.template for p in parts] == ["cuda/gemm_sm90.cu.j2"] + ["cuda/gemm_sm80.cu.j2"] * 2
    assert dict(parts[0].context)["tile"] == "128, 256, 64"
    assert dict(gemms[0].kernel.context)["ladder"] == (0, 1, 2)


def test_without_a_profile_calls_run_the_estimates_choice_per_bucket(tmp_path):
    """The estimate's choice at the extent of the dims' min, opt and max (bert_base: batch x seq
    = 1, 4096 and 1048576 rows), in buckets like a profile's; every call has a choice, so the
    kernels keep only the ladder's last configuration (for operands a choice cannot read)."""
    plan = build_plan(spec_path("bert_base"), find_target(target_with_profile(tmp_path, [], estimate=True)))
    report = plan.tuning
    assert (report.calls, report.profiled, report.estimated) == (48, 0, 48)
    assert "48 of 48 GEMM/conv calls have no entry" in report.summary()
    assert "48 use the estimate's choice (" in report.summary()
    ffn = [s for s in plan.steps if s.kernel.label == "gemm_gelu"]
    parts = ffn[0].kernel.parts
    assert dict(ffn[0].kernel.context)["ladder"] == (0,)
    assert dict(parts[0].context)["block"] == "64, 64, 32"  # the ladder's last: sm80 64x64
    tunable = next(c.tunable for _, c in tunables(build_plan(
        spec_path("bert_base"), find_target("h200"), tune=False)) if c.tunable.key == BERT_FFN)
    rows = (1, 4096, 1048576)
    chosen = [tunable.estimate(m) for m in rows]
    assert chosen[0].name.startswith("sm90_pingpong_64x") and chosen[-1].name.startswith("sm90_")

    def index(config):  # the part compiled for `config`
        return next(i for i, p in enumerate(parts) if set(config.context) <= set(p.context))
    expected = selector(Dim.of("batch") * "seq", [(m, index(c)) for m, c in zip(rows, chosen)])
    assert "?" in expected and all(s.args[-1] == expected for s in ffn)
    assert len(parts) == 1 + len({c.name for c in chosen})


def test_profiled_calls_get_their_configuration_per_bucket(tmp_path):
    entries = [entry(BERT_QKV, 128, "sm90_coop_128x128x64_c1x1_streamk"),
               entry(BERT_QKV, 16384, "sm90_coop_128x256x64_c2x1"),
               entry(BERT_FFN, 128, "sm90_pingpong_64x128x64_c1x1")]
    target = find_target(target_with_profile(tmp_path, entries))
    plan = build_plan(spec_path("bert_base"), target)
    assert plan.tuning.profiled == 24 and plan.tuning.calls == 48
    qkv = [s for s in plan.steps if s.node.endswith(".attention.self.qkv")]
    assert len(qkv) == 12
    kernel = qkv[0].kernel
    # the union: the ladder (some calls of this kernel have no entry) + the profile's stream-K
    assert len(kernel.parts) == 4 and dict(kernel.parts[3].context)["splits"] == 0
    # M = batch * seq: up to 128 rows the stream-K kernel, beyond the 128x256 one (the ladder's 0)
    assert all(s.args[-1] == "(d_batch*d_seq <= 128 ? 3 : 0)" for s in qkv)
    # stream-K's partial sums need scratch: the plan reserves its bound at the largest bucket
    assert qkv[0].scratch_shared > 0
    ffn = [s for s in plan.steps if s.kernel.label == "gemm_gelu"]
    assert ffn and all(s.args[-1] == "1" for s in ffn)  # one bucket: no comparison
    # every call of the gelu kernel is profiled: its ladder shrinks to the last (any alignment)
    assert [p.template for p in ffn[0].kernel.parts] == ["cuda/gemm_sm80.cu.j2", "cuda/gemm_sm90.cu.j2"]


def test_emitted_sources_follow_the_profile(tmp_path):
    entries = [entry(BERT_FFN, 128, "sm90_pingpong_64x128x64_c1x1")]
    target = find_target(target_with_profile(tmp_path, entries))
    emission = emit(spec_path("bert_base"), target, str(tmp_path / "out"))
    (part,) = [k for k in emission.kernel_sources if os.path.basename(k).startswith("gemm_gelu_sm90_")]
    src = (tmp_path / "out" / part).read_text()
    assert "using Tile = Shape<_64, _128, _64>;" in src
    assert "cutlass::gemm::KernelTmaWarpSpecializedPingpong>::CollectiveOp;" in src
    assert "StreamKScheduler" not in src
    model = (tmp_path / "out" / "src" / "model.cpp").read_text()
    assert re.search(r"gemm_gelu_\w+\(cx, .*, 1\)\) return rc;", model)


def test_a_call_without_an_entry_borrows_the_closest_profiled_problem_of_its_family(tmp_path):
    # QKV (n=2304) has no entry; n=2560 is within NEARBY_RATIO (1.11x), closer than n=2000
    # (1.15x); the attention output (n=768) is beyond it from both: it runs the heuristic.
    # The entries are measured at 4096 rows, the spec's opt (batch 32 x seq 128).
    near = ("gemm float16 b=col act=none align=8,8,8", "n=2560 k=768 l=1")
    nearer_but_other_k = ("gemm float16 b=col act=none align=8,8,8", "n=2304 k=512 l=1")
    farther = ("gemm float16 b=col act=none align=8,8,8", "n=2000 k=768 l=1")
    entries = [entry(near, 4096, "sm90_pingpong_64x64x64_c1x1"),
               entry(farther, 4096, "sm90_coop_128x128x64_c1x1_streamk"),
               entry(nearer_but_other_k, 4096, "sm90_coop_256x128x64_c1x2")]
    plan = build_plan(spec_path("bert_base"), find_target(target_with_profile(tmp_path, entries)))
    report = plan.tuning
    assert (report.calls, report.profiled, report.nearby) == (48, 0, 12)
    assert "12 use the choice profiled for a nearby problem and 36 use the heuristic" in \
        report.summary()
    qkv = [s for s in plan.steps if s.node.endswith(".attention.self.qkv")]
    names = [p.name for p in qkv[0].kernel.parts]
    index = next(i for i, p in enumerate(qkv[0].kernel.parts)
                 if dict(p.context).get("tile") == "64, 64, 64")
    assert all(s.args[-1] == str(index) for s in qkv), names
    out = [s for s in plan.steps if s.node.endswith(".attention.output.dense")]
    assert out and all(s.args[-1] == "-1" for s in out)


def test_a_borrowed_choice_covers_only_the_rows_it_was_measured_near(tmp_path):
    """A nearby problem's entry measured at 128 rows says nothing of the call's 1, 4096 and
    1048576 rows (bert_base's min, opt and max): no extent borrows it (RegNetX's 6272-row
    choice at ResNeXt-101's 196 rows slowed ResNeXt). With the estimate, a call borrows where
    an entry is near (4096 rows) and runs the estimate's choice at the other extents."""
    near = ("gemm float16 b=col act=none align=8,8,8", "n=2560 k=768 l=1")
    far_rows = [entry(near, 128, "sm90_pingpong_64x64x64_c1x1")]
    plan = build_plan(spec_path("bert_base"), find_target(target_with_profile(tmp_path, far_rows)))
    assert (plan.tuning.calls, plan.tuning.nearby) == (48, 0)
    qkv = [s for s in plan.steps if s.node.endswith(".attention.self.qkv")]
    assert qkv and all(s.args[-1] == "-1" for s in qkv)

    near_rows = [entry(near, 4096, "sm90_coop_256x128x64_c1x2"),
                 entry(BERT_FFN, 4096, "sm90_coop_256x128x64_c1x2")]  # the FFN's own entry
    target = find_target(target_with_profile(tmp_path / "mixed", near_rows, estimate=True))
    plan = build_plan(spec_path("bert_base"), target)
    report = plan.tuning
    assert (report.calls, report.profiled, report.nearby, report.estimated) == (48, 12, 12, 24)
    assert "36 of 48 GEMM/conv calls have no entry" in report.summary()
    assert "12 use the choice profiled for a nearby problem and 24 use the estimate's" in \
        report.summary()
    qkv = [s for s in plan.steps if s.node.endswith(".attention.self.qkv")]
    tunable = next(c.tunable for _, c in tunables(build_plan(spec_path("bert_base"), target,
                   tune=False)) if c.tunable.problem_text == "n=2304 k=768 l=1")
    parts = qkv[0].kernel.parts

    def index(name):  # the part compiled for the configuration called `name`
        config = next(c for c in tunable.candidates if c.name == name)
        return next(i for i, p in enumerate(parts) if set(config.context) <= set(p.context))
    rows = {1: tunable.estimate(1).name, 4096: "sm90_coop_256x128x64_c1x2",
            1048576: tunable.estimate(1048576).name}
    expected = selector(Dim.of("batch") * "seq", [(m, index(n)) for m, n in rows.items()])
    assert all(s.args[-1] == expected for s in qkv), (expected, qkv[0].args[-1])


def test_entries_naming_unknown_configurations_are_ignored(tmp_path):
    entries = [entry(BERT_FFN, 128, "sm90_no_such_tile")]
    plan = build_plan(spec_path("bert_base"), find_target(target_with_profile(tmp_path, entries)))
    assert plan.tuning.profiled == 0


def test_pointwise_convs_run_as_gemms(tmp_path):
    plan = build_plan(spec_path("resnet50"), find_target("h200"))
    convs = [s for s in plan.steps if s.kernel.op == "conv2d" and s.kernel.label != "im2col"]
    conv_nodes = {n.name for n in plan.graph.nodes if n.op == "conv2d"}
    gemms = [s for s in plan.steps if s.kernel.label.startswith("gemm") and s.node in conv_nodes]
    # 16 3x3 convs and the three stride-2 downsamples stay convs; 33 1x1 convs and the stem
    # (after its im2col) are GEMMs
    assert len(convs) == 19 and len(gemms) == 34


@pytest.mark.parametrize("text, message", [
    ("entries:\n  - {family: a, problem: b, extent: 0, config: c}\n", "extent must be a positive number"),
    ("entries:\n  - {family: a, problem: b, extent: 1, config: c, speed: 3}\n", "unknown field 'speed'"),
    ("entries:\n  - {family: a, problem: b, config: c}\n", "missing required field 'extent'"),
    ("entries: {}\n", "entries must be a list"),
])
def test_a_broken_profile_is_a_located_error(tmp_path, text, message):
    path = tmp_path / "p.yaml"
    path.write_text("apiVersion: ait-build/v1\nkind: Profile\n" + text)
    with pytest.raises(SpecError) as err:
        read_profile(str(path))
    assert message in str(err.value) and f"{path}:" in str(err.value)


def test_profile_path_is_relative_to_the_targets_folder(tmp_path):
    from ait_build.spec.profile import profile_path
    target = find_target(target_with_profile(tmp_path, []))
    assert profile_path(target) == str(tmp_path / "profiles" / "h200.yaml")


@pytest.mark.parametrize("target", ["h200", "a100"])
def test_gemms_over_few_channels_get_narrow_candidates(target):
    """tiny_cnn in float16: its stem (after its im2col: K = 32; on the h200 a direct kernel
    instead, no GEMM: direct_stem_outputs), 1x1 convs and classifier (8 to 32 channels) may also
    run the narrow tiles (the Hopper ones where TMA can read the operands); BERT's GEMMs (768
    channels and more) are offered the usual ones only."""
    from ait_build.backends.cuda.configs import SM80_NARROW, SM90_NARROW
    from ait_build.codegen.tuning import tunables
    from cuda_helpers import fp16_spec
    narrow = {c.name for c in SM80_NARROW + SM90_NARROW}
    small = [c.tunable for _, c in tunables(build_plan(fp16_spec("tiny_cnn"), find_target(target),
                                                       tune=False)) if c.tunable.kind == "gemm"]
    assert len(small) == {"h200": 3, "a100": 4}[target]
    for t in small:
        names = {c.name for c in t.candidates}
        hopper = any(n.startswith("sm90") for n in names)
        assert narrow & names == {c.name for c in SM80_NARROW + (SM90_NARROW if hopper else ())}
    assert (target == "h200") == any(c.name.startswith("sm90") for t in small for c in t.candidates)
    bert = [c.tunable for _, c in tunables(build_plan(spec_path("bert_base"), find_target(target),
                                                      tune=False))]
    assert bert and not any(narrow & {c.name for c in t.candidates} for t in bert)
