"""profiles/<target>.yaml as `ait-build profile` writes it: one entry per (family, problem,
extent), one line each, sorted, so a diff of the file reads as "this problem now runs that
configuration". Writing merges with what the file holds: profiling another spec or another batch
adds entries and replaces only the ones measured again."""

from __future__ import annotations

import json
import os

from ait_build.codegen.tuning import ENTRY_FIELDS, Profile

HEADER = """\
# Kernel configurations for target {target}, measured by `ait-build profile` (docs/profile.md).
# Builds for {target} read this file: each GEMM/conv call runs the configuration measured
# fastest for its problem at the smallest extent (GEMM rows m, conv batch n) at or above its
# run-time one. `us` is that configuration's median time, `heuristic_us` what a build without
# an entry runs; `candidates` how many configurations were measured.
"""


def read_entries(path: str) -> tuple:
    """((family, problem, extent) -> entry dict, measured_on) of the file, validated like a
    build reads it; ({}, '') when there is none."""
    if not os.path.isfile(path):
        return {}, ""
    Profile.load(path)  # located errors for a broken file
    import yaml
    with open(path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh) or {}
    entries = {(e["family"], e["problem"], e["extent"]): dict(e) for e in doc.get("entries") or []}
    return entries, str(doc.get("measured_on") or "")


def _scalar(value) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def write_profile(path: str, target: str, measured_on: str, entries: dict) -> None:
    """Writes the merged entries (atomically: an interrupted write leaves the old file)."""
    lines = [HEADER.format(target=target), "apiVersion: ait-build/v1", "kind: Profile",
             f"target: {target}", f"measured_on: {json.dumps(measured_on)}", "entries:"]
    for key in sorted(entries):
        entry = entries[key]
        fields = ", ".join(f"{k}: {_scalar(entry[k])}" for k in ENTRY_FIELDS if k in entry)
        lines.append(f"  - {{{fields}}}")
    if not entries:
        lines[-1] = "entries: []"
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
