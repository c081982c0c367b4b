"""A job -> the sources of its profiling harness: the group's kernel made with every candidate
configuration (a dispatch and one translation unit per configuration, the same files a model
build compiles for the configurations it uses, so SCons compiles them in parallel and a
CacheDir shares them), and the backend's driver (cuda: templates/cuda/profile.cu.j2) that times
each candidate on each problem.

The candidates start with the heuristic's ladder, so configuration -1 of the kernel is exactly
what a build without a profile runs: the reference output and the baseline time.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from ait_build.codegen.emit import render_kernel, write_if_changed
from ait_build.codegen.render import render
from ait_build.profile.jobs import Job

# element counts of each pointer parameter, per driver kind, from the kernel's size arguments;
# `scale` keeps float16 sums of K products near 1
BUFFERS = {
    "gemm": (("out", "bo * bi * M * N", False, "1.0f"),
             ("a", "(bo - 1) * a_so + (bi - 1) * a_si + M * K", True, "1.0f"),
             ("b", "(bo - 1) * b_so + (bi - 1) * b_si + K * N", True, "1.0f / sqrtf(K)"),
             ("bias", "N", True, "0.5f"),
             ("res", "bo * bi * M * N", True, "1.0f")),
    "conv2d": (("out", "N * HO * WO * O", False, "1.0f"),
               ("x", "N * H * W * C", True, "1.0f"),
               ("w", "O * KH * KW * C", True, "1.0f / sqrtf(KH * KW * C)"),
               ("bias", "O", True, "0.5f"),
               ("res", "N * HO * WO * O", True, "1.0f")),
}
SCAN = {"int64_t": ("long long", "%lld"), "int": ("int", "%d"), "float": ("float", "%f")}
REPS = 20
FLUSH_BYTES = 256 << 20
SCRATCH_BYTES = 256 << 20


@dataclass(frozen=True)
class Harness:
    group: str
    folder: str  # build/<target>/profile/<group>
    sources: tuple  # paths relative to folder
    program: str  # relative to folder
    digest: str  # of every source: the journal's key for its measurements
    candidates: tuple  # Config, in the kernel's (and driver's) order


def render_harness(job: Job, backend, out_dir: str) -> Harness:
    """Writes the harness sources of `job` under out_dir (unchanged files are left alone)."""
    candidates = job.candidates
    ladder = tuple(candidates.index(c) for c in job.tunable.ladder)
    kernel = job.make(candidates, ladder)
    files = {k.source: render_kernel(k, backend) for k in (kernel, *kernel.parts)}
    params = kernel.params.rsplit(", ", 1)[0]  # the kernel's parameters before `config`
    pairs = [p.rsplit(" ", 1) for p in params.split(", ")]
    scalars = [dict(ctype=SCAN[t][0], name=n, scan=SCAN[t][1]) for t, n in pairs if not t.endswith("*")]
    pointers = [n for t, n in pairs if t.endswith("*")]
    buffers = [dict(name=n, elements=e, input=i, scale=s) for n, e, i, s in BUFFERS[job.tunable.kind]]
    if sorted(b["name"] for b in buffers) != sorted(pointers):
        raise RuntimeError(f"internal: the {job.tunable.kind} driver has no buffers for {pointers}")
    call = [f"{n}_ptr" if n in ("bias", "res") else f"buf_{n}.ptr" for n in pointers]
    files["src/profile.cu"] = render(backend.profile_driver, dict(
        kernel=kernel.name, family=job.family, params=kernel.params,
        candidates=tuple(c.name for c in candidates), reps=REPS,
        flush_bytes=FLUSH_BYTES, scratch_bytes=SCRATCH_BYTES, ctype=pairs[0][0].rstrip("*"),
        scalars=scalars, buffers=buffers,
        call_args=", ".join(call + [s["name"] for s in scalars])))
    for path, template in backend.support_files.items():
        files[path] = render(template, {})
    digest = hashlib.sha256()
    for path in sorted(files):
        write_if_changed(os.path.join(out_dir, path), files[path].encode())
        digest.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    sources = tuple(sorted(p for p in files if p.endswith(".cu")))
    return Harness(job.group, out_dir, sources, "harness", digest.hexdigest()[:16], candidates)
