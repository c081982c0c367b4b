"""Block uses: argument binding, `repeat` with PyTorch-style instance names, block outputs, and
the limits (graph nodes, graph entries evaluated) checked before an expansion runs away.

`BlockExpander` is a mixin of ModelBuilder (model.py); it uses the builder's `_entries`, `_sub`,
`_node_name`, `_resolve_inputs`, `_lookup`, `library` and `nodes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ait_build.errors import Location, SpecError, did_you_mean, shown
from ait_build.spec.blocks import NO_DEFAULT, BlockDef, check_arg_type
from ait_build.spec.expr import substitute
from ait_build.spec.fields import check_keys, expect_map
from ait_build.spec.names import check_name
from ait_build.spec.yamlfile import YMap, where

BLOCK_USE_FIELDS = ("name", "block", "repeat", "args", "inputs", "when", "doc")
MAX_REPEAT = 10_000
MAX_NODES = 100_000  # graph nodes after expansion; the largest real models have a few thousand
# graph entries evaluated during expansion, those that `when: false` drops included: without it a
# repeat of repeats of dropped entries would make no node and run for hours
MAX_ENTRIES = 200_000


@dataclass
class Scope:
    """Names visible inside the model or one block instance."""

    prefix: str  # prepended to node names: 'layer1.0.'
    names: dict  # local name -> tensor id
    env: dict  # values for $expressions
    prev: str | None = None  # last output, for implicit chaining
    prev_node: str = ""
    prev_hint: str = ""  # how to name the first output of a multi-output previous node
    blocks: tuple = ()  # block names being expanded, to catch recursion
    counters: dict = field(default_factory=dict)
    later: dict = field(default_factory=dict)  # names the graph defines further down -> Location
    dropped: list = field(default_factory=list)  # the entries `when` dropped



class BlockExpander:
    """Expands `{block: ..., repeat: ..., args: ...}` entries into the builder's graph."""

    min_size_cache: dict
    entries_seen: int

    def _block_use(self, entry: YMap, scope: Scope, loc: Location) -> None:
        check_keys(entry, BLOCK_USE_FIELDS, "a block use")
        bname = self._sub(entry["block"], scope, where(entry, "block"))
        block = self.library.get(bname, where(entry, "block"))
        if bname in scope.blocks:
            chain = " -> ".join(scope.blocks + (bname,))
            raise SpecError(f"block '{bname}' uses itself ({chain})", where(entry, "block"))
        repeat = self._sub(entry.get("repeat", 1), scope, where(entry, "repeat"))
        if not _valid_repeat(repeat):
            raise SpecError(f"'repeat' must be an integer from 1 to {MAX_REPEAT}, got {shown(repeat)}",
                            where(entry, "repeat"))
        # a repeated use whose name holds `${...}` names each instance itself (torchvision's
        # `encoder_layer_${i}`), evaluated with this repeat's `i`, instead of `<name>.<i>`
        templated = "repeat" in entry and isinstance(entry.get("name"), str) and "$" in entry["name"]
        local = entry["name"] if templated else self._node_name(entry, scope, bname, loc)
        inputs = self._resolve_inputs(entry, scope, loc, f"block use '{scope.prefix + local}'")
        if len(inputs) != len(block.inputs):
            raise SpecError(f"block '{bname}' takes {len(block.inputs)} input(s) "
                            f"({', '.join(block.inputs)}), got {len(inputs)}",
                            where(entry, "inputs") if "inputs" in entry else loc)
        args = expect_map(entry["args"], where(entry, "args"), "args") if "args" in entry else YMap()
        for key in args:
            if key not in block.params:
                raise SpecError(f"block '{bname}' has no param '{key}'" + did_you_mean(key, block.params)
                                + (f"; its params: {', '.join(block.params)}" if block.params else ""),
                                args.key_loc[key])
        nodes, entries = self._min_size(block)
        self._check_growth(repeat * nodes, bname, repeat, entry, loc)
        self._check_entries(repeat * entries, bname, repeat, entry, loc)
        outputs, start, instances = [], len(self.nodes), {}
        for i in range(repeat):
            if templated:
                instance = self._instance_name(entry, scope, i, instances)
                prefix = scope.prefix + instance + "."
            else:
                prefix = scope.prefix + local + (f".{i}" if "repeat" in entry else "") + "."
            env = self._block_env(block, args, dict(scope.env, i=i), loc)
            inner = Scope(prefix=prefix, names=dict(zip(block.inputs, inputs)), env=dict(env, i=i),
                          prev=inputs[0] if inputs else None,
                          prev_node=f"block input '{block.inputs[0]}'" if inputs
                          else f"the start of block '{bname}', which has no inputs",
                          blocks=scope.blocks + (bname,))
            try:
                self._entries(block.graph, inner)
                outputs = self._block_outputs(block, inner)
            except SpecError as exc:  # the cause is often an argument given at the use site
                exc.add_note(f"in block '{bname}' used as '{prefix[:-1]}'", loc)
                raise
            inputs = [outputs[0]] + inputs[1:] if inputs else inputs
            if templated:
                scope.names[instance] = outputs[0]
            if i == 0:  # now the size of one instance is known
                self._check_growth(repeat * (len(self.nodes) - start), bname, repeat, entry, loc,
                                   start)
        scope.names[local] = outputs[0]
        for oname, tid in zip(block.outputs or [], outputs):
            scope.names[f"{local}:{oname}"] = tid
        scope.prev, scope.prev_node = outputs[0], f"block '{scope.prefix + local}'"

    def _instance_name(self, entry, scope: Scope, i: int, seen: dict) -> str:
        loc = where(entry, "name")
        name = substitute(entry["name"], dict(scope.env, i=i), loc)
        if not isinstance(name, (str, int)) or isinstance(name, bool):
            raise SpecError(f"'name' must give a string, got {shown(name)}", loc)
        name = str(name)
        check_name(name, loc, "block instance")
        if name in seen:
            raise SpecError(f"instances {seen[name]} and {i} are both named '{name}'; use ${{i}} in "
                            "the name so each repeat gets its own", loc)
        seen[name] = i
        return name

    def _check_growth(self, adds, bname, repeat, entry, loc, start=None) -> None:
        """Fail before expanding a block use that would pass MAX_NODES, not after minutes."""
        total = (len(self.nodes) if start is None else start) + adds
        if total > MAX_NODES:
            raise SpecError(f"block '{bname}' repeated {repeat} time(s) makes the model at least "
                            f"{total} nodes; the limit is {MAX_NODES}",
                            where(entry, "repeat") if "repeat" in entry else loc)

    def _check_entries(self, adds, bname, repeat, entry, loc) -> None:
        """Fail before expanding a block use that would evaluate more than MAX_ENTRIES entries."""
        if self.entries_seen + adds > MAX_ENTRIES:
            raise SpecError(f"block '{bname}' repeated {repeat} time(s) evaluates at least "
                            f"{self.entries_seen + adds} graph entries (those 'when' drops count "
                            f"too); the limit is {MAX_ENTRIES}",
                            where(entry, "repeat") if "repeat" in entry else loc)

    def _count_entry(self, loc) -> None:
        """Counts one evaluated entry; the net under _check_entries' estimate (expressions)."""
        self.entries_seen += 1
        if self.entries_seen > MAX_ENTRIES:
            raise SpecError(f"block expansion evaluates more than {MAX_ENTRIES} graph entries "
                            "(those 'when' drops count too)", loc)

    def _min_size(self, block: BlockDef) -> tuple:
        """Lower bounds of (nodes added, entries evaluated) by one instance of `block`, from its
        literal repeats: an entry with 'when' adds no node for sure but is still evaluated."""
        if block.name not in self.min_size_cache:
            self.min_size_cache[block.name] = (0, 0)  # a block that uses itself is reported elsewhere
            nodes = entries = 0
            for entry in block.graph:
                entries += 1
                if not isinstance(entry, YMap):
                    continue
                name = entry.get("block")
                inner = self.library.blocks.get(name) if isinstance(name, str) else None
                if inner is None:
                    nodes += "op" in entry and "when" not in entry
                    continue
                if "when" in entry:
                    continue  # maybe never expanded
                repeat = entry.get("repeat", 1)
                repeat = repeat if _valid_repeat(repeat) else 1
                inner_nodes, inner_entries = self._min_size(inner)
                nodes += repeat * inner_nodes
                entries += repeat * inner_entries
            self.min_size_cache[block.name] = (nodes, entries)
        return self.min_size_cache[block.name]

    def _block_env(self, block: BlockDef, args: YMap, outer_env: dict, loc: Location) -> dict:
        env = {}
        for pname, param in block.params.items():
            if pname in args:
                value = substitute(args[pname], outer_env, args.where(pname))
                check_arg_type(param, value, args.where(pname))
            elif param.default is not NO_DEFAULT:
                value = param.default
            else:
                raise SpecError(f"block '{block.name}' needs argument '{pname}'", loc)
            env[pname] = value
        return env

    def _block_outputs(self, block: BlockDef, inner: Scope) -> list:
        if block.outputs is None:
            if inner.prev is None:
                raise SpecError(f"block '{block.name}' ends in a node with several outputs; "
                                "list its 'outputs'", block.loc)
            return [inner.prev]
        return [self._lookup(o, inner, block.loc) for o in block.outputs]


def _valid_repeat(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_REPEAT
