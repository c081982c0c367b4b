"""Where a model's time goes, per graph node (`ait-build bench --steps`, bench/cuda_profile.py):
the time of each kernel call (`<model>_time_steps`: one run with a wall-clock mark after every
call on cpu, eager with an event after every call on a GPU), the node's floating-point
operations and the bytes it must move (its inputs, outputs and weights, each once), and what
that makes in TFLOP/s and GB/s against the target's ceilings (its `device.peak_fp16_tflops`,
or `peak_fp32_tflops` for float32 models, and `hbm_tbps`): the fraction of the roofline says how
much a faster kernel could still gain there.
"""

from __future__ import annotations

import statistics

from ait_build.ir.dims import Dim
from ait_build.ir.dtypes import ITEMSIZE


def ceilings(target, dtype: str) -> tuple:
    """(TFLOP/s, TB/s) the target's datasheet facts give for a `dtype` model; None where the
    target file records none (that side of the roofline is then left out)."""
    peak = target.fact("peak_fp32_tflops" if dtype == "float32" else "peak_fp16_tflops")
    return peak, target.fact("hbm_tbps")


def time_steps(model, inputs: list, outputs: list, env: dict, runs: int, stream=None) -> list:
    """`runs` lists of per-step times (ms) of a built Model, from the library's time_steps()
    entry, one run each after one untimed run: `inputs` and `outputs` are the tensors' addresses
    in the manifest's order (host memory for a cpu build, device memory and the `stream` it
    enqueues on for a GPU build)."""
    import ctypes
    lib = model._api.lib
    name = f"{model.manifest.c_name}_"
    count = lib[name + "num_steps"]()
    timed = lib[name + "time_steps"]
    timed.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_void_p),
                      ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.POINTER(ctypes.c_float),
                      ctypes.c_int]
    dims = (ctypes.c_int64 * max(1, len(env)))(*[env[d] for d in model.manifest.dim_names])
    ins = (ctypes.c_void_p * max(1, len(inputs)))(*inputs)
    outs = (ctypes.c_void_p * max(1, len(outputs)))(*outputs)
    result = []
    for i in range(runs + 1):
        ms = (ctypes.c_float * count)()
        handle = model._enter()
        try:
            rc = timed(handle, dims, ins, outs, stream, ms, count)
            message = model._api.error() if rc else ""
        finally:
            model._leave()
        if rc:
            raise RuntimeError(f"time_steps failed ({rc}): {message}")
        if i:  # the first run warms up
            result.append(list(ms))
    return result


def node_bytes(graph, node, env: dict) -> int:
    """What a node must move at least: each input, weight and output once."""
    names = dict.fromkeys(list(node.inputs) + list(node.weights.values()) + list(node.outputs))
    total = 0
    for name in names:
        tensor = graph.tensors[name]
        count = 1
        for d in tensor.shape:
            count *= Dim.of(d).eval(env)
        total += count * ITEMSIZE[tensor.dtype]
    return total


def rows(plan, step_ms: list, env: dict, target) -> list:
    """One row per node (in execution order) from per-run lists of per-step times: the median
    time of each step, summed per node, beside the node's work, its rates and the fraction of the
    `target`'s roofline it reaches."""
    if not step_ms or any(len(run) != len(plan.steps) for run in step_ms):
        raise ValueError(f"expected {len(plan.steps)} step times per run")
    medians = [statistics.median(run[i] for run in step_ms) for i in range(len(plan.steps))]
    nodes = {n.name: n for n in plan.graph.nodes}
    out, by_node = [], {}
    for step, ms in zip(plan.steps, medians):
        key = step.node or "(model edges)"
        if key not in by_node:
            node = nodes.get(step.node)
            by_node[key] = dict(node=key, op=node.op if node else "", kernels=[], ms=0.0, flops=0,
                                bytes=node_bytes(plan.graph, node, env) if node else 0)
            out.append(by_node[key])
        row = by_node[key]
        row["ms"] += ms
        row["flops"] += Dim.of(step.flops).eval(env)
        if step.kernel.label not in row["kernels"]:
            row["kernels"].append(step.kernel.label)
    tflops, tbps = ceilings(target, plan.graph.dtype)
    for row in out:
        seconds = row["ms"] / 1e3
        row["tflops"] = row["flops"] / seconds / 1e12 if seconds > 0 else 0.0
        row["gbps"] = row["bytes"] / seconds / 1e9 if seconds > 0 else 0.0
        # the fraction of the roofline this node reaches: its time at the ceilings over its time
        floor = max(row["flops"] / (tflops * 1e12) if tflops else 0.0,
                    row["bytes"] / (tbps * 1e12) if tbps else 0.0)
        row["of_ceiling"] = floor / seconds if seconds > 0 else 0.0
        row["ceilings"] = [tflops, tbps]
    return out


def by_kind(table: list) -> list:
    """The rows summed per kernel kind (the first kernel label of each node)."""
    kinds: dict = {}
    for row in table:
        kind = row["kernels"][0] if row["kernels"] else row["op"]
        k = kinds.setdefault(kind, dict(kind=kind, calls=0, ms=0.0, flops=0, bytes=0))
        k["calls"] += 1
        k["ms"] += row["ms"]
        k["flops"] += row["flops"]
        k["bytes"] += row["bytes"]
    out = sorted(kinds.values(), key=lambda k: -k["ms"])
    for k in out:
        seconds = k["ms"] / 1e3
        k["tflops"] = k["flops"] / seconds / 1e12 if seconds else 0.0
        k["gbps"] = k["bytes"] / seconds / 1e9 if seconds else 0.0
    return out


def rate(value: float) -> str:
    """Three significant digits at most, no exponent: GPU rates in the hundreds, cpu ones below 1."""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}" if value >= 0.001 else "0"


def roofline(row: dict) -> str:
    return f"{row['of_ceiling']:.0%}" if any(row["ceilings"]) else "-"


def text(table: list, top: int = 12) -> str:
    """The kinds, then the slowest nodes, as aligned text."""
    kinds = by_kind(table)
    total = sum(k["ms"] for k in kinds)
    lines = [f"{'kernel':<30}{'calls':>6}{'ms':>9}{'share':>7}{'TFLOP/s':>9}{'GB/s':>8}"]
    for k in kinds:
        lines.append(f"{k['kind']:<30}{k['calls']:>6}{k['ms']:>9.3f}{k['ms'] / total:>7.0%}"
                     f"{rate(k['tflops']):>9}{rate(k['gbps']):>8}")
    lines.append(f"{'total':<30}{sum(k['calls'] for k in kinds):>6}{total:>9.3f}")
    lines.append("")
    tflops, tbps = table[0]["ceilings"] if table else (None, None)
    lines.append(f"slowest nodes ({top}): ms, TFLOP/s, GB/s, fraction of the target's roofline "
                 f"({tflops or '-'} TFLOP/s, {tbps or '-'} TB/s; none recorded: -)")
    for row in sorted(table, key=lambda r: -r["ms"])[:top]:
        lines.append(f"  {row['node'][:44]:<45}{row['ms']:>8.3f}{rate(row['tflops']):>8}"
                     f"{rate(row['gbps']):>8}{roofline(row):>6}  {'+'.join(row['kernels'])}")
    return "\n".join(lines)
