"""`ait-build bench --steps`: the per-node time table (step_report.py) of one bench case, from
the built library's time_steps() entry. Host builds take the case's NumPy inputs; GPU builds
take them as torch tensors on the device (PyTorch is needed there, as for --vs torch)."""

from __future__ import annotations

from ait_build import step_report

STEP_RUNS = 10  # timed runs per case: the table shows each step's median


def add_to(report: dict, target_name: str, runs: int = STEP_RUNS) -> None:
    """Times the steps of every case of a bench report (its `build_dir`), prints each case's
    table and keeps the rows under the case's `steps`."""
    import os
    from ait_build.bench import Context
    from ait_build.build_cli import make_inputs, project_root
    from ait_build.runtime import load_manifest
    from ait_build.spec.target import find_target
    manifest = load_manifest(os.path.join(report["build_dir"], "manifest.json"))
    # as bench's own processes: sleeping OpenMP threads cost a scheduler slice per parallel
    # region on a busy machine (docs/benchmarks.md); read when the library loads OpenMP
    os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE")
    target = find_target(target_name, os.path.join(project_root(), "targets"))
    ctx = Context(report["spec"], report["model"], report["build_dir"])
    try:
        for row in report["results"]:
            inputs = make_inputs(manifest, ctx.graph, row["dims"], seed=0)
            row["steps"] = node_rows(ctx, target, manifest, inputs, row["dims"], runs)
            dims = ",".join(f"{k}={v}" for k, v in row["dims"].items()) or "-"
            print(f"\n{report['model']} {dims}: per node, median of {runs} runs of time_steps()")
            print(step_report.text(row["steps"]))
    finally:
        ctx.close()


def node_rows(ctx, target, manifest, inputs: dict, case: dict, runs: int = STEP_RUNS) -> list:
    """step_report.rows for one case: `ctx` is bench's Context (spec and built model), `target`
    the resolved Target the library was built for."""
    from ait_build.pipeline import build_plan
    from ait_build.runtime.manifest import bind_dims
    model = ctx.model()
    env = bind_dims(manifest, {k: v.shape for k, v in inputs.items()}, case)
    plan = build_plan(ctx.spec, target)
    if manifest.device == "host":
        outputs = model.run(inputs)
        times = step_report.time_steps(model, _addresses(manifest.inputs, inputs, "ctypes"),
                                       _addresses(manifest.outputs, outputs, "ctypes"), env, runs)
    else:
        import torch
        tensors = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
        outputs = model.run(tensors)
        stream = torch.cuda.current_stream().cuda_stream
        times = step_report.time_steps(model, _addresses(manifest.inputs, tensors, "torch"),
                                       _addresses(manifest.outputs, outputs, "torch"), env, runs,
                                       stream)
    return step_report.rows(plan, times, env, target)


def _addresses(specs, arrays: dict, kind: str) -> list:
    if kind == "torch":
        return [arrays[t.name].data_ptr() for t in specs]
    return [arrays[t.name].ctypes.data for t in specs]
