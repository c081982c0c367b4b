"""bench/estimate_vs_journal.py on a made-up journal: per problem, the measured time of the
candidate the estimate ranks first against the fastest one, and the families left out."""

from __future__ import annotations

import json

import bench_scripts
from ait_build.backends.cuda.configs import gemm_candidates
from ait_build.backends.cuda.estimate import Device, ranked
from ait_build.pipeline import find_target

FAMILY = "gemm float16 b=col act={} align=8,8,8"
PROBLEM = {"n": 96, "k": 16, "l": 1}
EXTENT = 1605632


def _line(act, config, us, rel_err=0.0):
    return json.dumps({"digest": "d", "key": [FAMILY.format(act), "n=96 k=16 l=1", EXTENT],
                       "result": {"config": config, "us": us, "rel_err": rel_err}})


def test_the_estimates_choice_against_the_best(tmp_path):
    tool = bench_scripts.load("estimate_vs_journal")
    device = Device.of(find_target("h200"), True)
    offered = gemm_candidates("float16", True, 8, 16)[0][:4]
    choice = ranked(device, "gemm", PROBLEM, offered, EXTENT)[0][1].name
    others = [c.name for c in offered if c.name != choice]
    lines = [_line("relu", choice, 300.0)] + [_line("relu", name, 100.0 * (i + 1))
                                               for i, name in enumerate(others)]
    # a wrong result (beyond float16's tolerance) is no candidate, however fast
    lines += [_line("relu", others[-1], 1.0, rel_err=0.5)]
    lines += [_line("silu", choice, 900.0), _line("silu", others[0], 100.0),
              json.dumps({"digest": "d", "key": [FAMILY.format("relu"), "n=8 k=8 l=1", 1],
                          "result": {"config": choice, "error": "cannot run"}})]
    journal = tmp_path / "journal.jsonl"
    journal.write_text("\n".join(lines) + "\n", encoding="utf-8")
    times = tool.measured(str(journal))
    assert len(times) == 2  # the failed candidate's problem has no valid time
    picked, best, rows = tool.compare(times, device, skip_acts=("silu",))
    assert (picked, best) == (300.0, 100.0)
    assert rows[0][0] == 3.0 and rows[0][4] == choice
    picked, best, _ = tool.compare(times, device)
    assert (picked, best) == (1200.0, 200.0)
