"""`ait-build bench --steps`: the per-node time table (step_report.py) of one bench case, from
the built library's time_steps() entry. Host builds take the case's NumPy inputs; GPU builds
take them as torch tensors on the device (PyTorch is needed there, as for --vs torch)."""

from __future__ import annotations

import os

from ait_build.bench import step_report
from ait_build.bench.competitors import Context
from ait_build.ir.resources import project_root
from ait_build.pipeline import build_plan, find_target
from ait_build.runtime.inputs import make_inputs
from ait_build.runtime.manifest import bind_dims

STEP_RUNS = 10  # timed runs per case: the table shows each step's median


def add_to(report: dict, target_name: str, runs: int = STEP_RUNS) -> None:
    """Times the steps of every case of a bench report (its `build_dir`), prints each case's
    table and keeps the rows under the case's `steps`."""
    target = find_target(target_name, os.path.join(project_root(), "targets"))
    ctx = Context(report["spec"], report["model"], report["build_dir"])
    try:
        manifest = ctx.model().manifest
        for row in report["results"]:
            inputs = make_inputs(manifest, ctx.graph, row["dims"], seed=0)
            row["steps"] = node_rows(ctx.spec, ctx.model(), target, inputs, row["dims"], runs)
            dims = ",".join(f"{k}={v}" for k, v in row["dims"].items()) or "-"
            print(f"\n{report['model']} {dims}: per node, median of {runs} runs of time_steps()")
            print(step_report.text(row["steps"]))
    finally:
        ctx.close()


def node_rows(spec: str, model, target, inputs: dict, case: dict, runs: int = STEP_RUNS) -> list:
    """step_report.rows for one case of a built `model` of `spec`: `target` is the resolved
    Target it was built for, `inputs` NumPy arrays, `case` the dims given."""
    manifest = model.manifest
    env = bind_dims(manifest, {k: v.shape for k, v in inputs.items()}, case)
    plan = build_plan(spec, target)
    stream = None
    if manifest.device != "host":
        import torch
        inputs = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
        stream = torch.cuda.current_stream().cuda_stream
    outputs = model.run(inputs)
    times = step_report.time_steps(model, [_address(inputs[t.name]) for t in manifest.inputs],
                                   [_address(outputs[t.name]) for t in manifest.outputs], env,
                                   runs, stream)
    return step_report.rows(plan, times, env, target)


def _address(array) -> int:
    """A NumPy array's or a torch tensor's data address."""
    return array.data_ptr() if hasattr(array, "data_ptr") else array.ctypes.data
