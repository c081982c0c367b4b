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
from ait_build.files.output import create_new, write_output
from ait_build.files.read import read_bytes
from ait_build.ir.resources import project_root
from ait_build.spec.fields import check_header, check_keys, expect_list, expect_map, get
from ait_build.spec.target import stock_targets_dir
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


def target_root(target) -> str:
    """The folder that holds the target file's targets/ folder (a project, or ait-build's data)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(target.source))) if target.source else ""


def own_profile_path(target) -> str:
    """The target's profile_cache, relative to the folder that holds its targets/ folder: for a
    stock target, the profile that comes with ait-build."""
    path = target.profile_cache
    if not path or os.path.isabs(path):
        return path
    return os.path.join(target_root(target), path)


def is_stock(target) -> bool:
    return bool(target.source) and os.path.samefile(os.path.dirname(os.path.abspath(
        target.source)), stock_targets_dir())


def project_profile_path(target, start: str | None = None) -> str:
    """The profile `ait-build profile` writes: for a stock target its profile_cache under the
    project around `start` (the working directory), since measurements belong to the user's
    repository and the installed package's copy is lost on reinstall; for a project's own
    target, its own profile_cache."""
    path = target.profile_cache
    if not path or os.path.isabs(path) or not is_stock(target):
        return own_profile_path(target)
    return os.path.join(project_root(start), path)


def profile_path(target, start: str | None = None) -> str:
    """The profile a build reads: the project's where it has one, else the target's own."""
    mine = project_profile_path(target, start)
    return mine if mine and os.path.isfile(mine) else own_profile_path(target)


def profile_root(target, path: str) -> str:
    """The folder a manifest names the profile `path` relative to: the project's for the
    project's file, the target's for its own."""
    return target_root(target) if path == own_profile_path(target) else project_root()


def adopt_stock_profile(target, start: str | None = None, echo=print) -> str:
    """The project's profile file (project_profile_path), first copied from the stock one where
    the project has none, so that measuring one spec keeps the stock entries of the others;
    says so. Returns its path."""
    mine, stock = project_profile_path(target, start), own_profile_path(target)
    if mine and mine != stock and not os.path.exists(mine) and os.path.isfile(stock):
        create_new(mine, read_bytes(stock), project_root(start))  # never through a link
        echo(f"copied the stock profile of '{target.name}' into the project as "
             f"{os.path.relpath(mine, project_root(start))}: `ait-build profile` writes there and "
             "builds read it first; commit it")
    return mine


_LOADED: dict = {}


def load_profile(target) -> dict:
    """read_profile of the target's profile (profile_path), parsed once per file version."""
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
