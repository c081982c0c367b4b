"""Typed access to YAML mappings with located errors: the schema checks of every spec kind."""

from __future__ import annotations

from ait_build.errors import Location, SpecError, did_you_mean, shown
from ait_build.spec.yamlfile import YList, YMap, number_hint, type_name, where

TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false",
              YMap: "a mapping", YList: "a list"}


def expect_map(value, loc: Location, what: str) -> YMap:
    if not isinstance(value, YMap):
        raise SpecError(f"{what} must be a mapping, got {type_name(value)}", loc)
    return value


def expect_list(value, loc: Location, what: str) -> YList:
    if not isinstance(value, YList):
        raise SpecError(f"{what} must be a list, got {type_name(value)}", loc)
    return value


def string_list(mapping: YMap, key: str, what: str) -> tuple:
    """mapping[key] as a tuple of strings (() when absent), each checked."""
    if key not in mapping:
        return ()
    items = expect_list(mapping[key], where(mapping, key), f"{what}.{key}")
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise SpecError(f"{what}.{key} must be a list of strings", items.where(i))
    return tuple(items)


def check_path(path: str, loc: Location, what: str, used_as: str = "file name") -> str:
    """A file name (or a command-line argument) from a spec: none can hold a NUL character (the
    OS refuses it)."""
    if "\0" in path:
        raise SpecError(f"{what} {shown(path)} holds a NUL character; no {used_as} can", loc)
    return path


def check_keys(mapping: YMap, allowed, what: str, required=()) -> None:
    """Unknown keys get a did-you-mean; missing required keys point at the mapping."""
    for key in mapping:
        if key not in allowed:
            raise SpecError(f"unknown field '{key}' in {what}" + did_you_mean(key, allowed),
                            mapping.key_loc.get(key, mapping.loc))
    for key in required:
        if key not in mapping:
            raise SpecError(f"{what} is missing required field '{key}'", mapping.loc)
    check_docs(mapping, what)


def check_docs(mapping: YMap, what: str) -> None:
    """Free-text fields are still typed: a misplaced list under 'doc' is a mistake."""
    for key in ("doc", "description"):
        if key in mapping:
            get(mapping, key, str, what)


def get(mapping: YMap, key: str, kind, what: str, default=None, required=False):
    """mapping[key] checked against `kind` (a type or tuple of types); int is accepted as float."""
    if key not in mapping:
        if required:
            raise SpecError(f"{what} is missing required field '{key}'", mapping.loc)
        return default
    value = mapping[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    ok = any(_is(value, k) for k in kinds)
    if not ok:
        names = " or ".join(TYPE_NAMES.get(k, k.__name__) for k in kinds)
        raise SpecError(f"'{key}' in {what} must be {names}, got {type_name(value)}"
                        + (f" ({shown(value)})" if not isinstance(value, (YMap, YList)) else "")
                        + (number_hint(value) if float in kinds else ""), where(mapping, key))
    return float(value) if float in kinds and int not in kinds and isinstance(value, int) else value


def _is(value, kind) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, kind)


def check_header(doc, path: str, kind: str) -> YMap:
    """Every spec file starts with `apiVersion: ait-build/v1` and its `kind`."""
    doc = expect_map(doc, Location(path, 1, 1), "a spec file")  # parse_yaml checked it already
    version = doc.get("apiVersion")
    if version is None:
        raise SpecError("missing 'apiVersion' (expected 'ait-build/v1')", doc.loc)
    if version != "ait-build/v1":
        raise SpecError(f"unsupported apiVersion '{version}' (expected 'ait-build/v1')",
                        where(doc, "apiVersion"))
    got = doc.get("kind")
    if got != kind:
        raise SpecError(f"expected kind '{kind}', got '{got}'" if got is not None
                        else f"missing 'kind' (expected '{kind}')",
                        where(doc, "kind") if got is not None else doc.loc)
    return doc
