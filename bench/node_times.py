"""What the GPU kernel benchmarks share (gpu_families.py, gpu_gemm_families.py): specs of
independent nodes written under build/specs/, built with SCons in one run, and every node timed
with the library's time_steps() (CUDA events around each kernel) on random device inputs."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_specs(docs: dict) -> dict:
    """part -> (spec path, model name, info) for docs {part: (spec doc, info)}; a file is
    rewritten only when its text changes."""
    import yaml
    from ait_build.codegen.emit import write_if_changed
    paths = {}
    for part, (doc, info) in docs.items():
        path = os.path.join(ROOT, "build", "specs", f"{doc['name']}.yaml")
        write_if_changed(path, yaml.safe_dump(doc, sort_keys=False).encode())
        paths[part] = (path, doc["name"], info)
    return paths


def build(paths: dict, target: str) -> None:
    """The specs for `target` in one parallel SCons run, through the shared CacheDir."""
    spec_list = ",".join(p for p, _, _ in paths.values())
    subprocess.run([sys.executable, "-m", "SCons", "-Q", "-C", ROOT, f"-j{os.cpu_count()}",
                    f"target={target}", f"spec={spec_list}", "cache=build/cache"], check=True)


def time_nodes(path: str, name: str, target, env: dict, dtype: str, runs: int) -> tuple:
    """(step_report rows of every node, the plan) of the built spec at dims `env`, on inputs of
    random values in `dtype` on the current CUDA device, median of `runs` timed runs."""
    import torch
    from ait_build.bench import step_report
    from ait_build.pipeline import build_plan
    from ait_build.runtime import Model
    model = Model(os.path.join(ROOT, "build", target.name, name))
    try:
        manifest = model.manifest
        inputs = {t.name: torch.randn(*[env[d] if d in env else int(d) for d in t.shape],
                                      device="cuda", dtype=getattr(torch, dtype))
                  for t in manifest.inputs}
        outputs = model.run(inputs)
        torch.cuda.synchronize()
        times = step_report.time_steps(model, [inputs[t.name].data_ptr() for t in manifest.inputs],
                                       [outputs[t.name].data_ptr() for t in manifest.outputs],
                                       env, runs, torch.cuda.current_stream().cuda_stream)
        plan = build_plan(path, target)
        return step_report.rows(plan, times, env, target), plan
    finally:
        model.close()
