"""The public benchmark's table (zoo.py): one row per case from the `ait-build bench` reports,
ours beside each PyTorch mode and the best of them, with the numerical errors."""

from __future__ import annotations

# report key -> column: the cuda bench's PyTorch modes (the cpu bench's `torch` is eager)
MODES = (("torch_eager", "eager"), ("torch", "eager"), ("torch_eager_cuda_graph", "eager+graph"),
         ("torch_compile", "compile"))


def summary_rows(reports: list) -> list:
    """One row per case: ours, each PyTorch mode, the best of them, the errors."""
    rows = []
    for report in reports:
        for r in report.get("results", []):
            row = {"model": report.get("model", "?"), "dims": r.get("dims", {}),
                   "ait_build_ms": r["ait_build"]["median_ms"]}
            best = None
            for key, label in MODES:
                if key not in r:
                    continue
                side = r[key]
                row[label] = side.get("median_ms")
                if side.get("median_ms") and (best is None or side["median_ms"] < best[1]):
                    best = (label, side["median_ms"])
                if "skipped" in side:
                    row[label + "_skipped"] = side["skipped"]
            if best:
                row["best"], row["best_ms"] = best
                row["ours_over_best"] = row["ait_build_ms"] / best[1]
            errors = r.get("rel_l2_vs_float32") or {}  # cuda; on cpu, PyTorch is float32
            row["rel_l2_ours"] = errors.get("ait_build", r.get("torch", {}).get("rel_l2"))
            row["rel_l2_torch_fp16"] = errors.get("torch_eager")
            rows.append(row)
    return rows


def markdown(rows: list, no_compile: bool) -> str:
    def ms(v):
        return f"{v:.3f}" if isinstance(v, float) else "-"

    def err(v):
        return f"{v:.1e}" if isinstance(v, float) else "-"

    head = ["model", "dims", "ait-build ms", "eager ms", "eager+graph ms",
            "compile ms" + (" (--no-compile)" if no_compile else ""), "best", "ours/best",
            "rel L2 ours", "rel L2 torch fp16"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        dims = ",".join(f"{k}={v}" for k, v in r["dims"].items())
        ratio = f"**{r['ours_over_best']:.2f}**" if r.get("ours_over_best") else "-"
        compiled = "skipped" if no_compile else ms(r.get("compile"))
        lines.append("| " + " | ".join([r["model"], dims, ms(r["ait_build_ms"]), ms(r.get("eager")),
                                         ms(r.get("eager+graph")), compiled, r.get("best", "-"),
                                         ratio, err(r.get("rel_l2_ours")),
                                         err(r.get("rel_l2_torch_fp16"))]) + " |")
    return "\n".join(lines)
