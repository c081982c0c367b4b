"""profiles/<target>.yaml: read as a build reads it (`load_profile`: the target's profile_cache,
checked with located errors, as (family, problem) -> entries for codegen/tuning.py's Profile),
and written as `ait-build profile` writes it: one entry per (family, problem, extent), one line
each, sorted, so a diff of the file reads as "this problem now runs that configuration". Writing merges with what the file holds: profiling another spec
or another batch adds entries and replaces only the ones measured again."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

from ait_build.errors import SpecError
from ait_build.files.output import write_output
from ait_build.spec.fields import check_header, check_keys, expect_list, expect_map, get
from ait_build.spec.yamlfile import load_yaml, plain, where

ENTRY_FIELDS = ("family", "problem", "extent", "config", "us", "heuristic_us", "candidates")
HEADER = """\
# Kernel configurations for target {target}, measured by `ait-build profile` (docs/profile.md).
# Builds for {target} read this file: each GEMM/conv call runs the configuration measured
# fastest for its problem at the smallest extent (GEMM rows m, conv batch n) at or above its
# run-time one. `us` is that configuration's median time, `heuristic_us` what a build without
# an entry runs; `candidates` how many configurations were measured.
"""


@dataclass(frozen=True)
class Entry:
    extent: int
    config: str
    where: object = field(default=None, compare=False)  # its place in the file (a Location)


def read_profile(path: str) -> dict:
    """(family, problem) -> entries sorted by extent, of the profile in `path` (none when there
    is no such file)."""
    if not path or not os.path.exists(path):
        return {}
    _, found = _profile_doc(path)
    return {k: tuple(v[e] for e in sorted(v)) for k, v in found.items()}


def _profile_doc(path: str):
    """The profile file's document, checked as a build reads it (located errors)."""
    doc = check_header(load_yaml(path), path, "Profile")
    check_keys(doc, ("apiVersion", "kind", "target", "measured_on", "entries"), "a profile")
    items = expect_list(doc.get("entries", []), where(doc, "entries"), "entries") \
        if doc.get("entries") is not None else []
    found: dict = {}
    for i, raw in enumerate(items):
        what = f"entries[{i}]"
        raw = expect_map(raw, items.where(i), what)
        check_keys(raw, ENTRY_FIELDS, what, required=("family", "problem", "extent", "config"))
        extent = _positive(raw, "extent", int, what)
        for key in ("us", "heuristic_us"):
            _positive(raw, key, float, what)
        _positive(raw, "candidates", int, what)
        entry = Entry(extent, get(raw, "config", str, what), items.where(i))
        key = (get(raw, "family", str, what), get(raw, "problem", str, what))
        if extent in found.get(key, {}):
            raise SpecError(f"{what} repeats the entry of {key[0]} {key[1]} at extent {extent} "
                            f"(line {found[key][extent].where.line})", items.where(i))
        found.setdefault(key, {})[extent] = entry
    return doc, found


def _positive(raw, key: str, kind, what: str):
    """A field that, when present, holds a finite positive number (a time, a count, an extent):
    a negative or NaN time would otherwise win every comparison."""
    value = get(raw, key, kind, what)
    if value is not None and not (math.isfinite(value) and value > 0):
        raise SpecError(f"{what}.{key} must be a positive number, got {value!r}", raw.where(key))
    return value


def profile_path(target) -> str:
    """The target's profile_cache, relative to the folder that holds its targets/ folder."""
    path = target.profile_cache
    if not path or os.path.isabs(path):
        return path
    root = os.path.dirname(os.path.dirname(os.path.abspath(target.source))) if target.source else ""
    return os.path.join(root, path)


_LOADED: dict = {}


def load_profile(target) -> dict:
    """read_profile of the target's profile_cache, parsed once per file version."""
    path = profile_path(target)
    try:
        stamp = os.stat(path).st_mtime_ns if path else None
    except OSError:
        stamp = None
    key = (path, stamp)
    if key not in _LOADED:
        _LOADED[key] = read_profile(path) if stamp is not None else {}
    return _LOADED[key]


def read_entries(path: str) -> tuple:
    """((family, problem, extent) -> entry dict, measured_on) of the file, validated like a
    build reads it; ({}, '') when there is none (or it is a device: `-o /dev/null`)."""
    if not os.path.isfile(path):
        return {}, ""
    doc, _ = _profile_doc(path)  # located errors for a broken file
    doc = plain(doc)
    entries = {(e["family"], e["problem"], e["extent"]): e for e in doc.get("entries") or []}
    return entries, str(doc.get("measured_on") or "")


def _scalar(value) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def write_profile(path: str, target: str, measured_on: str, entries: dict) -> None:
    """Writes the merged entries (atomically: an interrupted write leaves the old file; a
    device such as /dev/null is written in place)."""
    lines = [HEADER.format(target=target), "apiVersion: ait-build/v1", "kind: Profile",
             f"target: {target}", f"measured_on: {json.dumps(measured_on)}", "entries:"]
    for key in sorted(entries):
        entry = entries[key]
        fields = ", ".join(f"{k}: {_scalar(entry[k])}" for k in ENTRY_FIELDS if k in entry)
        lines.append(f"  - {{{fields}}}")
    if not entries:
        lines[-1] = "entries: []"
    write_output(path, ("\n".join(lines) + "\n").encode())
