"""Reusable blocks: `blocks:` in a model or in included block files (`kind: Blocks`).

A block has typed params, named inputs, a graph, and outputs; a model uses it with
`{name: layer1, block: bottleneck, repeat: 3, args: {...}}`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ait_build.errors import Location, SpecError, did_you_mean, shown
from ait_build.files.read import kind_of
from ait_build.spec.fields import (check_header, check_keys, check_path, expect_list, expect_map,
                                   get, type_name)
from ait_build.spec.names import check_identifier
from ait_build.spec.yamlfile import YList, YMap, load_yaml, where, ylist

BLOCK_FIELDS = ("params", "inputs", "outputs", "graph", "doc")
BLOCKS_FILE_FIELDS = ("apiVersion", "kind", "include", "blocks", "description")
PARAM_TYPES = {"int": int, "float": (int, float), "bool": bool, "str": str}
MAX_INCLUDE_DEPTH = 16
MAX_INCLUDE_FILES = 256  # distinct files one model includes, directly or not
RESERVED = ("i", "true", "false")  # names expressions give a meaning of their own
NO_DEFAULT = object()


@dataclass
class BlockParam:
    name: str
    type: str | None
    default: object
    loc: Location


@dataclass
class BlockDef:
    name: str
    params: dict  # name -> BlockParam
    inputs: list
    outputs: list | None
    graph: YList
    loc: Location


def parse_block(name: str, body, loc: Location) -> BlockDef:
    body = expect_map(body, loc, f"block '{name}'")
    check_keys(body, BLOCK_FIELDS, f"block '{name}'", required=("graph",))
    params = {}
    raw = expect_map(body.get("params", YMap()), where(body, "params"), f"params of block '{name}'") \
        if "params" in body else {}
    for pname, spec in raw.items():
        ploc = raw.where(pname)
        check_identifier(pname, raw.key_loc[pname], "block param", RESERVED)
        if isinstance(spec, YMap):
            check_keys(spec, ("type", "default", "doc"), f"param '{pname}'")
            ptype = get(spec, "type", str, f"param '{pname}'")
            if ptype is not None and ptype not in PARAM_TYPES:
                raise SpecError(f"unknown param type '{ptype}'" + did_you_mean(ptype, PARAM_TYPES),
                                where(spec, "type"))
            default = spec["default"] if "default" in spec else NO_DEFAULT
        else:
            ptype, default = None, spec
        params[pname] = BlockParam(pname, ptype, default, ploc)
        if default is not NO_DEFAULT:
            check_arg_type(params[pname], default, where(spec, "default") if isinstance(spec, YMap)
                           else ploc, "the default of param")
    inputs = _names(body, "inputs", name, default=["x"])
    outputs = _names(body, "outputs", name, default=None)
    graph = expect_list(body["graph"], where(body, "graph"), f"graph of block '{name}'")
    if not graph:
        raise SpecError(f"block '{name}' has an empty graph", where(body, "graph"))
    return BlockDef(name, params, inputs, outputs, graph, loc)


def _names(body, key, block, default):
    if key not in body:
        return default
    items = expect_list(body[key], where(body, key), f"{key} of block '{block}'")
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise SpecError(f"{key} of block '{block}' must be names, got {type_name(item)}",
                            items.where(i))
    if len(set(items)) != len(items):
        raise SpecError(f"{key} of block '{block}' repeats a name", where(body, key))
    return list(items)


def check_arg_type(param: BlockParam, value, loc: Location, what: str = "argument") -> None:
    if param.type is None:
        return
    kinds = PARAM_TYPES[param.type]
    if isinstance(value, bool) and param.type != "bool" or not isinstance(value, kinds):
        raise SpecError(f"{what} '{param.name}' must be {param.type}, got {type_name(value)} "
                        f"({shown(value)})", loc)


class BlockLibrary:
    """Blocks gathered from a model's `blocks:` and its includes, following nested includes.
    Each file is read once: a file included again (a diamond of includes) adds nothing, so
    includes cannot fan out into exponential re-reading."""

    def __init__(self):
        self.blocks: dict = {}
        self.files: set = set()  # real paths of the block files read

    def add_from(self, doc: YMap, path: str, stack=()) -> None:
        if "include" in doc:
            items = doc["include"]
            if isinstance(items, str):
                items = ylist([items], where(doc, "include"))
            items = expect_list(items, where(doc, "include"), "include")
            for i, rel in enumerate(items):
                if not isinstance(rel, str):
                    raise SpecError(f"include entries must be paths, got {type_name(rel)}",
                                    items.where(i))
                check_path(rel, items.where(i), "include path")
                self._include(rel, path, items.where(i), stack)
        if "blocks" in doc:
            blocks = expect_map(doc["blocks"], where(doc, "blocks"), "blocks")
            for name, body in blocks.items():
                check_identifier(name, blocks.key_loc.get(name, blocks.loc), "block")
                if name in self.blocks:
                    first = self.blocks[name].loc
                    raise SpecError(f"block '{name}' is defined twice (first at {first})",
                                    blocks.key_loc[name])
                self.blocks[name] = parse_block(name, body, blocks.key_loc[name])

    def _include(self, rel: str, including: str, loc: Location, stack) -> None:
        full = os.path.normpath(os.path.join(os.path.dirname(including), rel))
        if os.path.isabs(rel):
            full = rel
        real = os.path.realpath(full)
        chain = [p for p, _ in stack] + [os.path.realpath(including)]
        if real in chain:
            loop = " -> ".join(os.path.basename(p) for p in chain + [real])
            raise SpecError(f"include loop: {loop}", loc)
        if len(stack) >= MAX_INCLUDE_DEPTH:
            raise SpecError(f"includes nested deeper than {MAX_INCLUDE_DEPTH}", loc)
        if not os.path.exists(full):
            raise SpecError(f"included file {shown(rel)} not found (looked for {shown(full, 200)})",
                            loc)
        if not os.path.isfile(full):
            raise SpecError(f"included file {shown(rel)} is {kind_of(os.stat(full).st_mode)}, not "
                            "a block file", loc)
        if real in self.files:
            return
        if len(self.files) >= MAX_INCLUDE_FILES:
            raise SpecError(f"the model includes more than {MAX_INCLUDE_FILES} block files", loc)
        self.files.add(real)
        stack = tuple(stack) + ((os.path.realpath(including), loc),)
        self.add_from(_read_blocks_file(full), full, stack)

    def get(self, name, loc: Location) -> BlockDef:
        if not isinstance(name, str):
            raise SpecError(f"'block' must be a block name, got {type_name(name)}", loc)
        if name not in self.blocks:
            raise SpecError(f"unknown block {shown(name)}" + did_you_mean(name, self.blocks), loc)
        return self.blocks[name]


def _read_blocks_file(path: str) -> YMap:
    doc = check_header(load_yaml(path), path, "Blocks")
    check_keys(doc, BLOCKS_FILE_FIELDS, "a blocks file")
    return doc


def load_blocks(path: str) -> BlockLibrary:
    """A block file (`kind: Blocks`) with its includes, checked as far as it can be without args."""
    library = BlockLibrary()
    library.add_from(_read_blocks_file(path), path)
    return library
