"""Repeated structure -> blocks with `repeat`, so an imported spec reads like a written one.

Node names follow the source's modules (`layer1.0.conv1`), so the instances of a container are
the runs of nodes under `C.0.`, `C.1.`, ... (or `C.name_0.`, `C.name_1.`, as torchvision's ViT
names its layers). Instances made of the same ops wired the same way share one block; attribute
values that differ between them (channels, strides, a reshape's sizes) become block params, set
per use in `args`. Consecutive instances with equal args and the same other inputs become one use
with `repeat`.

Containers fold from the innermost out, so an outer block can hold the uses of an inner one
(a stage of ConvNeXt blocks). A structure becomes a block when it occurs at least twice (in one
container or across containers: ResNet's bottlenecks of every stage). An instance qualifies when
its nodes are contiguous and exactly one of its tensors is read outside it; a run of instances
also needs each to read the previous one's output as its first input.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ait_build.importers.entries import entry_text, node_entry
from ait_build.importers.graph import ImportGraph

INDEXED = re.compile(r"^(?P<base>.*?)(?P<sep>\.|_)(?P<index>\d+)$")
MIN_ITEMS = 2  # an instance of one node is clearer written out
STRUCTURAL = ("name", "op", "block", "inputs", "weights")  # entry keys that are not values


@dataclass
class Item:
    """A node, or a block use made by an earlier fold."""

    name: str
    inputs: list  # refs read
    outputs: list  # refs later items may read
    node: object = None  # graph.Node
    use: dict | None = None  # the use's entry, names from the model's root

    def entry(self, prev, prefix: str = "", rename=None) -> dict:
        rename = rename or {}
        if self.node is not None:
            return node_entry(self.node, prev, prefix, rename)
        entry = dict(self.use)
        entry["name"] = _local(entry["name"], prefix)
        inputs = [rename.get(r, r) for r in self.inputs]
        if inputs == [prev] and len(inputs) == 1:
            entry.pop("inputs", None)
        else:
            entry["inputs"] = inputs
        return _ordered(entry)


@dataclass
class Block:
    name: str
    params: dict  # name -> type
    inputs: list
    outputs: list | None
    entries: list

    def lines(self) -> list:
        out = [f"  {self.name}:"]
        if self.params:
            out.append("    params: {" + ", ".join(f"{k}: {{type: {v}}}"
                                                  for k, v in self.params.items()) + "}")
        out.append("    inputs: " + entry_text(list(self.inputs)))
        if self.outputs:
            out.append("    outputs: " + entry_text(list(self.outputs)))
        out.append("    graph:")
        out += ["      - " + entry_text(e) for e in self.entries]
        return out


@dataclass
class BlockPlan:
    blocks: list = field(default_factory=list)
    entries: list = field(default_factory=list)
    outputs: list = field(default_factory=list)

    @staticmethod
    def of(items: list, g: ImportGraph, blocks: list, outputs: list) -> "BlockPlan":
        plan = BlockPlan(blocks, [], outputs)
        prev = g.inputs[0][0] if g.inputs else None
        for item in items:
            plan.entries.append(item.entry(prev))
            prev = item.outputs[-1] if len(item.outputs) >= 1 and (
                item.use is not None or len(item.outputs) == 1) else None
        return plan

    @staticmethod
    def flat(g: ImportGraph) -> "BlockPlan":
        return BlockPlan.of(_items(g), g, [], list(g.outputs))


@dataclass
class Instance:
    """The items of one container instance and how they connect to the rest."""

    prefix: str  # 'layer1.0.'
    index: int
    items: list
    external: list  # refs read from outside, in order of first read
    output: str  # the one ref read outside
    shared: bool = True  # whether more than the next instance reads `output`


def _items(g: ImportGraph) -> list:
    return [Item(n.name, list(n.inputs), list(n.outputs), node=n) for n in g.nodes]


def _local(name: str, prefix: str) -> str:
    return name[len(prefix):] if prefix and name.startswith(prefix) else name


def _ordered(entry: dict) -> dict:
    order = ("name", "op", "block", "repeat", "inputs", "args")
    return {k: entry[k] for k in order if k in entry} | \
        {k: v for k, v in entry.items() if k not in order}


def _instance_key(path: str):
    """(container key 'layer1.', index) for an instance path 'layer1.0' ('x.layer_3' too)."""
    if "$" in path:
        return None
    m = INDEXED.match(path)
    if not m or not m.group("base"):
        return None
    return m.group("base") + m.group("sep"), int(m.group("index"))


def _containers(items: list) -> dict:
    """container key -> {index: instance path}."""
    found: dict = {}
    for item in items:
        parts = item.name.split(".")
        for depth in range(1, len(parts) + 1):
            key = _instance_key(".".join(parts[:depth]))
            if key is not None:
                found.setdefault(key[0], {})[key[1]] = ".".join(parts[:depth])
    return found


def _instances(items: list, paths: dict, consumers: dict, outputs: list) -> list:
    out = []
    for index in sorted(paths):
        path = paths[index]
        prefix = path + "."
        members = [i for i, it in enumerate(items) if it.name.startswith(prefix) or it.name == path]
        if not members or members != list(range(members[0], members[-1] + 1)):
            out.append(None)
            continue
        chosen = [items[i] for i in members]
        produced = {r for it in chosen for r in it.outputs}
        external = []
        for it in chosen:
            for r in it.inputs:
                if r not in produced and r not in external:
                    external.append(r)
        ids = {id(it) for it in chosen}
        outside = [r for r in sorted(produced)
                   if r in outputs or any(id(c) not in ids for c in consumers.get(r, []))]
        if len(outside) != 1 or not external or len(chosen) < MIN_ITEMS or \
                any(it.name == path for it in chosen):
            out.append(None)
            continue
        out.append(Instance(prefix, index, chosen, external, outside[0]))
    for inst, nxt in zip(out, out[1:] + [None]):
        if inst is not None:
            nxt_ids = {id(it) for it in nxt.items} if nxt is not None else set()
            inst.shared = inst.output in outputs or any(
                id(c) not in nxt_ids for c in consumers.get(inst.output, []))
    return out


def _rename(inst: Instance) -> dict:
    rename = {inst.external[0]: "x"}
    for j, r in enumerate(inst.external[1:]):
        rename[r] = f"in_{j + 1}"
    for it in inst.items:
        for r in it.outputs:
            rename[r] = _local(r, inst.prefix)
    return rename


def _signature(inst: Instance):
    """(structure key, slot values): the instance with local names, every number and string
    of its attributes and args pulled out into slots (their values, in order)."""
    rename = _rename(inst)
    structure, values = [], []
    for it in inst.items:
        entry = it.entry(None, inst.prefix, rename)
        entry.setdefault("inputs", [rename.get(r, r) for r in it.inputs])
        shaped = []
        for key, value in entry.items():
            if key in STRUCTURAL:
                shaped.append((key, _frozen(value)))
            else:
                shaped.append((key, _slots(value, values)))
        structure.append(tuple(shaped))
    return (tuple(structure), rename[inst.output], len(inst.external) - 1), values


def _frozen(value):
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value


def _slots(value, values: list):
    if isinstance(value, list):
        return tuple(_slots(v, values) for v in value)
    if isinstance(value, dict):
        return tuple((k, _slots(v, values)) for k, v in value.items())
    if isinstance(value, (bool, int, float, str)):
        values.append(value)
        return ("slot", type(value).__name__)
    return ("fixed", repr(value))


def _runs(sigs: list) -> list:
    """Runs of instances with one structure, each reading the previous one's output first."""
    runs, current = [], []
    for item in sigs:
        if item is None:
            if current:
                runs.append(current)
            current = []
            continue
        inst, sig = item
        if current and (sig[0] != current[-1][1][0]
                        or inst.external[0] != current[-1][0].output):
            runs.append(current)
            current = []
        current.append((inst, sig))
    if current:
        runs.append(current)
    return runs


def fold_blocks(g: ImportGraph) -> BlockPlan:
    items = _items(g)
    outputs = list(g.outputs)
    blocks, taken = [], set()
    containers = _containers(items)
    for depth in sorted({k.count(".") for k in containers}, reverse=True):
        consumers: dict = {}
        for it in items:
            for r in it.inputs:
                consumers.setdefault(r, []).append(it)
        found, counts = [], Counter()
        for key, paths in sorted(_containers(items).items()):
            if key.count(".") != depth:
                continue
            insts = _instances(items, paths, consumers, outputs)
            sigs = [(inst, _signature(inst)) if inst is not None else None for inst in insts]
            for run in _runs(sigs):
                found.append((key, run))
                counts[run[0][1][0]] += len(run)
        chosen = [(key, run) for key, run in found if counts[run[0][1][0]] >= 2]
        if not chosen:
            continue
        defs = {}
        for key, run in chosen:
            structure = run[0][1][0]
            if structure not in defs:
                values = [sig[1] for _, r in chosen if r[0][1][0] == structure for _, sig in r]
                varying = [j for j in range(len(values[0]))
                           if any(v[j] != values[0][j] for v in values)]
                names = _param_names(run[0][0], varying)
                # slots that hold the same value in every instance share one param (of one
                # type: a reshape's 64 and a scalar's 64.0 do not)
                first: dict = {}
                for k, j in enumerate(varying):
                    key = tuple((type(v[j]).__name__, v[j]) for v in values)
                    names[k] = first.setdefault(key, names[k])
                block = _define(_block_name(g, run[0][0], taken), run[0][0], run[0][1],
                                dict(zip(varying, names)))
                blocks.append(block)
                defs[structure] = (block, varying, names)
        items, outputs = _replace(items, outputs, chosen, defs)
    return BlockPlan.of(items, g, blocks, outputs)


def _define(name: str, inst: Instance, sig, names: dict) -> Block:
    rename = _rename(inst)
    _, out_local, n_others = sig[0]
    inputs = ["x"] + [f"in_{j + 1}" for j in range(n_others)]
    params, slot = {}, [0]
    entries, prev = [], "x"
    for it in inst.items:
        entry = it.entry(prev, inst.prefix, rename)
        for key in list(entry):
            if key not in STRUCTURAL:
                entry[key] = _param(entry[key], names, slot, params)
        entries.append(entry)
        prev = rename.get(it.outputs[-1]) if it.outputs and (
            it.use is not None or len(it.outputs) == 1) else None
    outputs = None if prev == out_local else [out_local]
    return Block(name, params, inputs, outputs, entries)


def _param(value, names: dict, slot: list, params: dict):
    """`value` with the varying slots (slot -> param name) replaced by `$param`."""
    if isinstance(value, list):
        return [_param(v, names, slot, params) for v in value]
    if isinstance(value, dict):
        return {k: _param(v, names, slot, params) for k, v in value.items()}
    if isinstance(value, (bool, int, float, str)):
        j = slot[0]
        slot[0] += 1
        if j in names:
            params[names[j]] = {bool: "bool", int: "int", float: "float", str: "str"}[type(value)]
            return f"${names[j]}"
    return value


def _param_names(inst: Instance, varying: list) -> list:
    """A readable, unique identifier per varying slot: '<node>_<attribute>[_<index>]'."""
    names, slot = [], [0]
    rename = _rename(inst)
    want = set(varying)

    def walk(value, base):
        if isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{base}_{i}")
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{base}_{k}")
        elif isinstance(value, (bool, int, float, str)):
            if slot[0] in want:
                stem = re.sub(r"[^A-Za-z0-9_]", "_", base)[-48:].lstrip("_0123456789") or "p"
                name, k = stem, 2
                while name in names or name in ("i", "true", "false"):
                    name = f"{stem}_{k}"
                    k += 1
                names.append(name)
            slot[0] += 1

    for it in inst.items:
        entry = it.entry(None, inst.prefix, rename)
        for key, value in entry.items():
            if key not in STRUCTURAL:
                walk(value, f"{entry['name']}_{key}")
    return names


def _block_name(g: ImportGraph, inst: Instance, taken: set) -> str:
    cls = g.classes.get(inst.prefix[:-1], "")
    base = _snake(cls.rsplit(".", 1)[-1]) if cls else ""
    if not base or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", base):
        container = _instance_key(inst.prefix[:-1])[0].rstrip("._")
        base = re.sub(r"[^A-Za-z0-9_]", "_", container.split(".")[-1]) + "_block"
    if not re.match(r"[A-Za-z_]", base):
        base = "block_" + base
    name, i = base, 2
    while name in taken:
        name = f"{base}_{i}"
        i += 1
    taken.add(name)
    return name


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _replace(items: list, outputs: list, chosen: list, defs: dict) -> tuple:
    """Items with each chosen run replaced by its uses; refs to instance outputs renamed."""
    start = {id(run[0][0].items[0]): (key, run) for key, run in chosen}
    inside = {id(it) for _, run in chosen for inst, _ in run for it in inst.items}
    rename: dict = {}
    out = []
    for it in items:
        if id(it) in start:
            key, run = start[id(it)]
            block, varying, names = defs[run[0][1][0]]
            out += _uses(key, run, block, varying, names, rename)
            continue
        if id(it) in inside:
            continue
        out.append(it)
    for it in out:
        it.inputs = [rename.get(r, r) for r in it.inputs]
        if it.node is not None:
            it.node.inputs = list(it.inputs)
    return out, [rename.get(r, r) for r in outputs]


def _uses(key: str, run: list, block: Block, varying: list, names: list, rename: dict) -> list:
    """Use items for a run: consecutive instances with equal args share a `repeat`."""
    sep, base = key[-1], key[:-1]
    uses, i = [], 0
    while i < len(run):
        args = [run[i][1][1][k] for k in varying]
        j = i
        # one repeat only over instances that also read the same other inputs (GPT-OSS's
        # layers alternate a sliding-window and a causal mask: each keeps its own)
        while j + 1 < len(run) and [run[j + 1][1][1][k] for k in varying] == args and \
                run[j + 1][0].external[1:] == run[i][0].external[1:]:
            j += 1
        part = run[i:j + 1]
        first = part[0][0]
        if len(part) == 1:
            name = f"{base}{sep}{first.index}"
            refs = [name]
        elif sep == "." and first.index == 0 and not any(inst.shared for inst, _ in part[:-1]):
            name = base
            refs = [base]
        else:
            offset = f" + {first.index}" if first.index else ""
            name = f"{base}{sep}${{i{offset}}}"
            refs = [f"{base}{sep}{inst.index}" for inst, _ in part]
        use = {"name": name, "block": block.name}
        if len(part) > 1:
            use["repeat"] = len(part)
        if varying:
            use["args"] = dict(zip(names, args))
        ins = [rename.get(r, r) for r in first.external]
        for (inst, _), ref in zip(part, refs if len(refs) == len(part) else [None] * len(part)):
            if ref is not None:
                rename[inst.output] = ref
        rename[part[-1][0].output] = refs[-1]
        uses.append(Item(name, ins, refs, use=use))
        i = j + 1
    return uses
