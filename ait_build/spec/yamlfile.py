"""YAML loading that keeps source positions, rejects duplicate keys and guards against abuse.

PyYAML's composer gives nodes with marks; we build plain dicts and lists from them ourselves so
every mapping and list remembers where it and each of its entries came from. Aliases are allowed
but the expanded document is capped, so an alias bomb fails fast instead of eating memory.
"""

from __future__ import annotations

import os

import yaml

from ait_build.errors import Location, SpecError

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_NODES = 500_000  # after alias expansion
MAX_DEPTH = 64


class YMap(dict):
    """A mapping from a YAML file; `loc`, `key_loc[key]` and `value_loc[key]` give positions."""

    loc: Location
    key_loc: dict
    value_loc: dict

    def where(self, key) -> Location:
        return self.value_loc.get(key, self.loc)


class YList(list):
    """A sequence from a YAML file; `loc` and `item_loc[i]` give positions."""

    loc: Location
    item_loc: list

    def where(self, index: int) -> Location:
        return self.item_loc[index] if 0 <= index < len(self.item_loc) else self.loc


def located(path: str, mark) -> Location:
    return Location(path, mark.line + 1, mark.column + 1)


def where(container, key) -> Location:
    """Position of an entry of a YMap/YList (or the container's own, if unknown)."""
    if isinstance(container, (YMap, YList)):
        return container.where(key)
    return getattr(container, "loc", Location("<unknown>"))


class _Builder:
    def __init__(self, path: str):
        self.path = path
        self.count = 0
        self.constructor = yaml.constructor.SafeConstructor()

    def build(self, node, depth: int = 0):
        self.count += 1
        loc = located(self.path, node.start_mark)
        if self.count > MAX_NODES:
            raise SpecError(
                f"document expands to more than {MAX_NODES} YAML nodes "
                "(is an alias used recursively, a 'billion laughs' document?)", loc)
        if depth > MAX_DEPTH:
            raise SpecError(f"nesting deeper than {MAX_DEPTH} levels", loc)
        if isinstance(node, yaml.MappingNode):
            out = YMap()
            out.loc, out.key_loc, out.value_loc = loc, {}, {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise SpecError("YAML merge keys ('<<') are not supported; use blocks instead",
                                    located(self.path, key_node.start_mark))
                key = self.build(key_node, depth + 1)
                key_loc = located(self.path, key_node.start_mark)
                if isinstance(key, (YMap, YList)):
                    raise SpecError("a mapping key must be a plain value", key_loc)
                if key in out:
                    first = out.key_loc[key]
                    raise SpecError(f"duplicate key '{key}' (first defined at line {first.line})",
                                    key_loc)
                out[key] = self.build(value_node, depth + 1)
                out.key_loc[key] = key_loc
                out.value_loc[key] = located(self.path, value_node.start_mark)
            return out
        if isinstance(node, yaml.SequenceNode):
            out = YList()
            out.loc, out.item_loc = loc, []
            for item in node.value:
                out.append(self.build(item, depth + 1))
                out.item_loc.append(located(self.path, item.start_mark))
            return out
        try:
            return self.constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise SpecError(f"bad scalar value: {getattr(exc, 'problem', exc)}", loc) from None


def parse_yaml(text: str, path: str):
    """Parse one YAML document from `text` into YMap/YList/scalars with positions."""
    if len(text.encode("utf-8", "replace")) > MAX_FILE_BYTES:
        raise SpecError(f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB", Location(path, 1, 1))
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = located(path, mark) if mark else Location(path, 1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError(f"YAML syntax error: {problem}", loc) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"YAML error: {exc}", Location(path, 1, 1)) from None
    except RecursionError:
        raise SpecError(f"nesting deeper than {MAX_DEPTH} levels", Location(path, 1, 1)) from None
    nodes = [n for n in nodes if n is not None]
    if not nodes:
        raise SpecError("file is empty (expected a mapping with 'apiVersion' and 'kind')",
                        Location(path, 1, 1))
    if len(nodes) > 1:
        raise SpecError("file holds more than one YAML document; put one spec per file",
                        located(path, nodes[1].start_mark))
    try:
        return _Builder(path).build(nodes[0])
    except RecursionError:
        raise SpecError(f"nesting deeper than {MAX_DEPTH} levels", Location(path, 1, 1)) from None


def load_yaml(path: str, shown_as: str | None = None):
    """Read and parse a YAML file; errors name the file as `shown_as` (default: the given path)."""
    shown = shown_as or path
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise SpecError(f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB",
                            Location(shown, 1, 1))
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise SpecError("no such file", Location(shown)) from None
    except IsADirectoryError:
        raise SpecError("is a directory, expected a YAML file", Location(shown)) from None
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror}", Location(shown)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"file is not UTF-8 text (byte {exc.start})", Location(shown, 1, 1)) from None
    return parse_yaml(text, shown)
