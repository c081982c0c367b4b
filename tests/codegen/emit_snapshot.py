"""Snapshot of every generated file, for refactors that must not change what is generated.

    python tests/codegen/emit_snapshot.py write DIR [--targets cpu,a100,h200]
    python tests/codegen/emit_snapshot.py compare BEFORE AFTER

`write` emits every spec in specs/ and the cuda op-group specs (tests/backends/cuda/cuda_op_groups.py:
their float16 and bfloat16 variants included) for each target into DIR/<target>/<spec>/: every
file emit() writes except weights.safetensors, which is recorded by its sha256 (the seed models'
weights run to hundreds of MB). A spec a target cannot build records its error message instead.
The a100 and h200 targets read profiles/a100.yaml and profiles/h200.yaml as a build does.
`compare` lists the files that differ, appear or disappear between two snapshots and exits 1
when there are any; for a manifest.json it names the fields that differ, and a build_id.cpp that
differs only in the build id (the hash of its manifest) is counted as such.
"""

from __future__ import annotations

import argparse
import filecmp
import glob
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WEIGHTS = "weights.safetensors"


def all_specs() -> list:
    sys.path.insert(0, os.path.join(ROOT, "tests", "backends", "cuda"))
    from cuda_op_groups import all_specs as cuda_specs
    specs = sorted(glob.glob(os.path.join(ROOT, "specs", "*.yaml")))
    return list(dict.fromkeys(specs + cuda_specs()))


def write(out: str, targets: list) -> None:
    from ait_build.pipeline import emit
    from ait_build.errors import AitError
    specs = all_specs()
    for target in targets:
        for spec in specs:
            name = os.path.splitext(os.path.basename(spec))[0]
            dest = os.path.join(out, target, name)
            os.makedirs(dest, exist_ok=True)
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    emission = emit(spec, target, tmp)
                except AitError as exc:
                    with open(os.path.join(dest, "ERROR"), "w", encoding="utf-8") as fh:
                        fh.write(f"{exc}\n")
                    print(f"{target} {name}: error: {exc}")
                    continue
                for rel in emission.files:
                    src = os.path.join(tmp, rel)
                    if rel == WEIGHTS:
                        with open(src, "rb") as fh:
                            digest = hashlib.sha256(fh.read()).hexdigest()
                        with open(os.path.join(dest, WEIGHTS + ".sha256"), "w") as fh:
                            fh.write(digest + "\n")
                        continue
                    os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
                    shutil.copyfile(src, os.path.join(dest, rel))
            print(f"{target} {name}: {len(emission.files)} files")


def files_under(root: str) -> set:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def json_paths(a, b, prefix="") -> list:
    """The dotted paths where two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in sorted(set(a) | set(b))
                for p in json_paths(a.get(k), b.get(k), f"{prefix}{k}.")]
    return [] if a == b else [prefix.rstrip(".")]


def how_it_differs(before: str, after: str, rel: str) -> str:
    with open(os.path.join(before, rel), encoding="utf-8", errors="replace") as fh:
        old = fh.read()
    with open(os.path.join(after, rel), encoding="utf-8", errors="replace") as fh:
        new = fh.read()
    if rel.endswith("manifest.json"):
        return "fields " + ", ".join(json_paths(json.loads(old), json.loads(new)))
    if rel.endswith("build_id.cpp"):
        hexid = re.compile(r"[0-9a-f]{64}")
        if hexid.sub("ID", old) == hexid.sub("ID", new):
            return "the build id only"
    return "content"


def compare(before: str, after: str) -> int:
    a, b = files_under(before), files_under(after)
    gone, new = sorted(a - b), sorted(b - a)
    changed = sorted(p for p in a & b
                     if not filecmp.cmp(os.path.join(before, p), os.path.join(after, p), shallow=False))
    for label, paths in (("only before", gone), ("only after", new)):
        for p in paths:
            print(f"{label}: {p}")
    kinds: dict = {}
    for p in changed:
        how = how_it_differs(before, after, p)
        print(f"differs: {p}: {how}")
        kinds.setdefault(f"{os.path.basename(p)}: {how}", []).append(p)
    for how, paths in sorted(kinds.items()):
        print(f"  {len(paths)} x {how}")
    print(f"{len(a & b) - len(changed)} identical, {len(changed)} differ, {len(gone)} gone, "
          f"{len(new)} new")
    return 1 if gone or new or changed else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("out")
    w.add_argument("--targets", default="cpu,a100,h200")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    args = p.parse_args()
    if args.cmd == "write":
        write(args.out, [t for t in args.targets.split(",") if t])
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
