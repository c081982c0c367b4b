"""Depthwise tiles beyond the planner's today (H200): blocks of up to 512 threads, and 8 channels
a thread (one 16-byte read of a float16 window), each beside the planned tile."""
import json, os, sys
from dataclasses import replace
sys.path.insert(0, os.getcwd())
from bench import depthwise_variants
from bench.gpu_families import write_specs
from ait_build.pipeline import build_plan, find_target
from ait_build.backends import toolchain_for
import ait_build.backends.gpu.depthwise as dw
paths = write_specs(128, "float16")
path, name, info = paths["depthwise"]
target = find_target("h200")
plan = build_plan(path, target)

def halved(t):
    """8 channels a thread, half the strip, twice the strips: about the same window"""
    return replace(t, vec=8, px=(t.px + 1) // 2, gw=t.gw * 2)


def alternatives(planned, ranked):
    """ranked: raw tiles of up to 512 threads (the patched limit), best first"""
    out = []
    def fits(t):
        c = CTX
        rows = (t.th - 1) * c["sh"] + (c["kh"] - 1) * c["dh"] + 1
        cols = (t.gw * t.px - 1) * c["sw"] + (c["kw"] - 1) * c["dw"] + 1
        return rows * cols * t.slice * 2 + c["kh"] * c["kw"] * t.slice * 4 <= dw.SHARED_BYTES

    def add(t):
        if t is not None and t != planned and t not in out and t.slice % t.vec == 0 \
                and t.threads <= 512 and fits(t):
            out.append(t)
    big = next((t for t in ranked if t.threads > 256), None)
    add(big)
    add(halved(planned))
    if big is not None:
        add(halved(big))
    second = next((t for t in ranked if t != planned and t.threads <= 256), None)
    if second is not None:
        add(halved(second))
    return out


CTX = {}
orig_variants = depthwise_variants.variants


def variants(kernel, dtype, ho, wo):
    CTX.clear()
    CTX.update(dict(kernel.context))
    return orig_variants(kernel, dtype, ho, wo)


depthwise_variants.variants = variants
dw.MAX_THREADS = 512
orig = dw.candidates
dw_raw = lambda *a, raw_windows=False, **k: orig(*a, raw_windows=True, **k) if raw_windows else []
depthwise_variants.candidates = dw_raw
depthwise_variants.alternatives = alternatives
if os.environ.get("DRY"):
    def dry(kernels, *a):
        for k in kernels:
            c = dict(k.context)
            print(k.label, c["slice"], c["vec"], c["px"], c["gw"], c["th"], c["raw_window"])
        raise SystemExit(f"{len(kernels)} kernels")
    depthwise_variants.build = dry
rows = depthwise_variants.sweep(plan, info, plan.backend, toolchain_for(target),
                                "build/big_blocks", 128, 20)
json.dump(rows, open(sys.argv[1], "w"), indent=1)
for node in dict.fromkeys(r["node"] for r in rows):
    mine = [r for r in rows if r["node"] == node]
    print(f"{node:28s}", " ".join(f"{'*' if r['planned'] else ''}({r['slice']}v{r['vec']},{r['px']},{r['gw']}x{r['th']} t{r['threads']}) {r['ms']:.4f}{' DIFF' if r['max_diff'] else ''}" for r in mine))
