"""Model spec -> Graph: header and field checks, dims, inputs, blocks with repeat, implicit
chaining, shape inference with located errors, weights."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ait_build.errors import Location, OpError, SpecError, did_you_mean, shown
from ait_build.ir.dims import Dim, DimRange, bounds, numel, shape_str
from ait_build.ir.dtypes import ALL_DTYPES, FLOAT_DTYPES
from ait_build.ir.graph import INPUT, WEIGHT, Graph, Node, Tensor, verify
from ait_build.ops.registry import TType, all_ops
from ait_build.spec.attrs import parse_attrs
from ait_build.spec.blocks import NO_DEFAULT, BlockDef, BlockLibrary, check_arg_type
from ait_build.spec.expr import substitute
from ait_build.spec.fields import (check_docs, check_header, check_keys, expect_list, expect_map, get,
                                   type_name)
from ait_build.spec.yamlfile import YList, YMap, load_yaml, where, ylist
from ait_build.weights import WeightStore

MODEL_FIELDS = ("apiVersion", "kind", "name", "description", "dtype", "dims", "inputs", "outputs",
                "weights", "include", "blocks", "graph")
NODE_FIELDS = ("name", "op", "inputs", "outputs", "when", "weights", "doc")
BLOCK_USE_FIELDS = ("name", "block", "repeat", "args", "inputs", "when", "doc")
MAX_REPEAT = 10_000
MAX_NODES = 100_000  # the largest real models have a few thousand
MAX_DIM = 2**31 - 1
MAX_TENSOR_ELEMENTS = 2**40
MAX_WEIGHT_ELEMENTS = 2**36


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


class ModelBuilder:
    def __init__(self, path: str, doc: YMap, weights_override: str | None = None):
        self.weights_override = weights_override
        self.path = path
        self.doc = doc
        self.dtype = "float32"
        self.dims: dict = {}
        self.tensors: dict = {}
        self.nodes: list = []
        self.node_names: dict = {}
        self.weight_specs: dict = {}
        self.library = BlockLibrary()
        self.ops = {k: v for k, v in all_ops().items() if not v.internal}
        self.min_nodes_cache: dict = {}

    # -- top level ------------------------------------------------------------------------------
    def build(self) -> Graph:
        doc = self.doc
        check_keys(doc, MODEL_FIELDS, "a model spec", required=("name", "inputs", "graph", "outputs"))
        name = get(doc, "name", str, "the model")
        if not name.replace("_", "").replace("-", "").isalnum():
            raise SpecError(f"model name '{name}' may only hold letters, digits, '_' and '-'",
                            where(doc, "name"))
        self.dtype = get(doc, "dtype", str, "the model", default="float32")
        if self.dtype not in FLOAT_DTYPES:
            raise SpecError(f"model dtype must be one of {', '.join(FLOAT_DTYPES)}, got '{self.dtype}'"
                            + did_you_mean(self.dtype, FLOAT_DTYPES), where(doc, "dtype"))
        self._dims(doc)
        self.library.add_from(doc, self.path)
        scope = Scope(prefix="", names={}, env={})
        inputs = self._inputs(doc, scope)
        graph_list = expect_list(doc["graph"], where(doc, "graph"), "graph")
        if not graph_list:
            raise SpecError("graph is empty", where(doc, "graph"))
        self._entries(graph_list, scope)
        outputs = self._outputs(doc, scope)
        graph = Graph(name=name, dtype=self.dtype, dims=self.dims, tensors=self.tensors,
                      nodes=self.nodes, inputs=inputs, outputs=outputs, source=self.path)
        graph.weights = self._weights(doc)
        graph.remove_unused_tensors()
        verify(graph)
        return graph

    def _dims(self, doc):
        if "dims" not in doc:
            return
        dims = expect_map(doc["dims"], where(doc, "dims"), "dims")
        for dname, spec in dims.items():
            loc = dims.key_loc[dname]
            if not isinstance(dname, str) or not dname.isidentifier():
                raise SpecError(f"dim name '{dname}' must be an identifier", loc)
            spec = expect_map(spec, dims.where(dname), f"dim '{dname}'")
            check_keys(spec, ("min", "max", "opt", "doc"), f"dim '{dname}'", required=("max",))
            lo = get(spec, "min", int, f"dim '{dname}'", default=1)
            hi = get(spec, "max", int, f"dim '{dname}'")
            opt = get(spec, "opt", int, f"dim '{dname}'", default=hi)
            if lo < 1:
                raise SpecError(f"dim '{dname}': min must be >= 1, got {lo}", where(spec, "min"))
            if hi > MAX_DIM:
                raise SpecError(f"dim '{dname}': max {hi} is over the limit {MAX_DIM}", where(spec, "max"))
            if lo > hi:
                raise SpecError(f"dim '{dname}': min {lo} is larger than max {hi}", spec.loc)
            if not lo <= opt <= hi:
                raise SpecError(f"dim '{dname}': opt {opt} is outside [{lo}, {hi}]", where(spec, "opt"))
            self.dims[dname] = DimRange(dname, lo, hi, opt)

    def _inputs(self, doc, scope) -> list:
        inputs = expect_map(doc["inputs"], where(doc, "inputs"), "inputs")
        if not inputs:
            raise SpecError("inputs is empty", where(doc, "inputs"))
        names = []
        for iname, spec in inputs.items():
            loc = inputs.key_loc[iname]
            self._check_name(iname, loc, "input")
            spec = expect_map(spec, inputs.where(iname), f"input '{iname}'")
            check_keys(spec, ("shape", "dtype", "doc"), f"input '{iname}'", required=("shape",))
            shape_list = expect_list(spec["shape"], where(spec, "shape"), f"shape of input '{iname}'")
            shape = []
            for i, d in enumerate(shape_list):
                if isinstance(d, int) and not isinstance(d, bool):
                    if not 1 <= d <= MAX_DIM:
                        raise SpecError(f"input '{iname}': size {d} must be in [1, {MAX_DIM}]",
                                        shape_list.where(i))
                    shape.append(Dim.of(d))
                elif isinstance(d, str):
                    if d not in self.dims:
                        raise SpecError(f"input '{iname}': unknown dim '{d}'"
                                        + did_you_mean(d, self.dims)
                                        + ("" if self.dims else "; declare it under 'dims'"),
                                        shape_list.where(i))
                    shape.append(Dim.of(d))
                else:
                    raise SpecError(f"input '{iname}': a shape entry must be an integer or a dim name, "
                                    f"got {type_name(d)}", shape_list.where(i))
            dtype = get(spec, "dtype", str, f"input '{iname}'", default=self.dtype)
            if dtype not in ALL_DTYPES:
                raise SpecError(f"unknown dtype '{dtype}'" + did_you_mean(dtype, ALL_DTYPES),
                                where(spec, "dtype"))
            self._check_size(tuple(shape), loc, f"input '{iname}'")
            self.tensors[iname] = Tensor(iname, tuple(shape), dtype, INPUT, loc)
            scope.names[iname] = iname
            names.append(iname)
        scope.prev = names[0]
        scope.prev_node = f"input '{names[0]}'"
        return names

    def _outputs(self, doc, scope) -> list:
        outputs = expect_list(doc["outputs"], where(doc, "outputs"), "outputs")
        if not outputs:
            raise SpecError("outputs is empty", where(doc, "outputs"))
        result = []
        for i, oname in enumerate(outputs):
            loc = outputs.where(i)
            if not isinstance(oname, str):
                raise SpecError(f"outputs must be tensor names, got {type_name(oname)}", loc)
            tid = self._lookup(oname, scope, loc)
            if tid in self.tensors and self.tensors[tid].kind == INPUT:
                raise SpecError(f"output '{oname}' is a model input; outputs must be computed", loc)
            if tid != oname and oname not in self.tensors:
                self._rename(tid, oname)  # an output is reachable under the name the user gave it
                tid = oname
            if tid in result:
                raise SpecError(f"output '{oname}' is listed twice", loc)
            result.append(tid)
        return result

    def _rename(self, old: str, new: str) -> None:
        self.tensors[new] = self.tensors.pop(old)
        self.tensors[new].name = new
        for n in self.nodes:
            n.inputs = [new if t == old else t for t in n.inputs]
            n.outputs = [new if t == old else t for t in n.outputs]

    def _weights(self, doc) -> WeightStore:
        specs = {t.name: (tuple(d.value for d in t.shape), t.init)
                 for t in self.tensors.values() if t.kind == WEIGHT}
        value = doc.get("weights", None)
        loc = where(doc, "weights")
        if self.weights_override is not None:  # a file given on the command line or by a test
            if not os.path.isfile(self.weights_override):
                raise SpecError(f"weights file '{self.weights_override}' not found")
            store = WeightStore(self.weights_override, None, specs)
            problems = store.check_file()
            if problems:
                raise SpecError(f"weights file '{self.weights_override}' does not match the spec: "
                                + "; ".join(problems[:3]), Location(self.weights_override))
            return store
        if value is None:
            return WeightStore(None, 0, specs)
        if isinstance(value, str):
            path = os.path.join(os.path.dirname(self.path), value)
            if not os.path.isfile(path):
                raise SpecError(f"weights file '{value}' not found (looked for {path})", loc)
            store = WeightStore(path, None, specs)
            try:
                problems = store.check_file()
            except Exception as exc:  # a corrupt file: report it at the field that names it
                raise SpecError(str(exc), loc) from None
            if problems:
                more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
                raise SpecError(f"weights file '{value}' does not match the spec: "
                                + "; ".join(problems[:3]) + more, loc)
            return store
        spec = expect_map(value, loc, "weights")
        check_keys(spec, ("random",), "weights", required=("random",))
        rnd = expect_map(spec["random"], where(spec, "random"), "weights.random")
        check_keys(rnd, ("seed",), "weights.random")
        seed = get(rnd, "seed", int, "weights.random", default=0)
        return WeightStore(None, seed, specs)

    # -- graph entries --------------------------------------------------------------------------
    def _entries(self, entries: YList, scope: Scope) -> None:
        scope.later = _names_defined(entries)
        for i, entry in enumerate(entries):
            loc = entries.where(i)
            entry = expect_map(entry, loc, "a graph entry")
            if "when" in entry:
                cond = self._sub(entry["when"], scope, where(entry, "when"))
                if not isinstance(cond, bool):
                    raise SpecError(f"'when' must be true or false, got {type_name(cond)}",
                                    where(entry, "when"))
                if not cond:
                    continue
            if "block" in entry:
                self._block_use(entry, scope, loc)
            elif "op" in entry:
                self._op_node(entry, scope, loc)
            else:
                raise SpecError("a graph entry needs 'op' (an op node) or 'block' (a block use)", loc)

    def _sub(self, value, scope: Scope, loc: Location):
        if isinstance(value, YList):
            out = YList(self._sub(v, scope, value.where(i)) for i, v in enumerate(value))
            out.loc, out.item_loc = value.loc, value.item_loc
            return out
        return substitute(value, scope.env, loc)

    def _node_name(self, entry, scope: Scope, kind: str, loc: Location) -> str:
        if "name" in entry:
            name = self._sub(entry["name"], scope, where(entry, "name"))
            if not isinstance(name, (str, int)) or isinstance(name, bool):
                raise SpecError(f"'name' must be a string, got {type_name(name)}", where(entry, "name"))
            name = str(name)
            self._check_name(name, where(entry, "name"), "node")
            return name
        count = scope.counters.get(kind, 0)
        scope.counters[kind] = count + 1
        return kind if count == 0 else f"{kind}_{count}"

    @staticmethod
    def _check_name(name, loc, what):
        if not isinstance(name, str) or not name or any(c.isspace() or c in ":$[]{}," for c in name):
            raise SpecError(f"{what} name '{name}' may not be empty or hold spaces or any of : $ [ ] {{ }} ,",
                            loc)

    def _claim(self, full: str, loc: Location) -> None:
        if full in self.node_names:
            raise SpecError(f"duplicate node name '{full}' (first defined at {self.node_names[full]})", loc)
        if len(self.nodes) >= MAX_NODES:
            raise SpecError(f"the model has more than {MAX_NODES} nodes", loc)
        self.node_names[full] = loc

    def _lookup(self, name, scope: Scope, loc: Location) -> str:
        if not isinstance(name, str):
            raise SpecError(f"an input must be a tensor name, got {type_name(name)}", loc)
        if name in scope.names:
            return scope.names[name]
        base = name.split(":")[0]
        later = scope.later.get(base)
        if later is not None and not any(k == base or k.startswith(base + ":") for k in scope.names):
            raise SpecError(f"tensor '{name}' is used before the node that computes it (line "
                            f"{later.line}); graphs run top to bottom, so a cycle cannot be written",
                            loc)
        hint = did_you_mean(name, scope.names)
        raise SpecError(f"undefined tensor '{name}'" + (hint or (
            " (tensors must be defined before use; graphs run top to bottom, so cycles cannot "
            "be written)" if scope.names else "")), loc)

    def _resolve_inputs(self, entry, scope: Scope, loc: Location, what: str) -> list:
        if "inputs" not in entry:
            if scope.prev is None:
                raise SpecError(f"{what} has no 'inputs' and the previous node ({scope.prev_node}) "
                                f"has several outputs; name the input, e.g. inputs: [{scope.prev_hint}]",
                                loc)
            return [scope.prev]
        raw = entry["inputs"]
        if isinstance(raw, str):
            raw = ylist([raw], where(entry, "inputs"))
        items = expect_list(raw, where(entry, "inputs"), f"inputs of {what}")
        return [self._lookup(self._sub(v, scope, items.where(i)), scope, items.where(i))
                for i, v in enumerate(items)]

    def _op_node(self, entry: YMap, scope: Scope, loc: Location) -> None:
        op_name = self._sub(entry["op"], scope, where(entry, "op"))
        op = op_for_entry(op_name, entry, self.ops)
        local = self._node_name(entry, scope, op_name, loc)
        full = scope.prefix + local
        self._claim(full, where(entry, "name") if "name" in entry else loc)
        lo, hi = op.input_range()
        if lo == 0 and hi == 0 and "inputs" not in entry:
            inputs = []
        else:
            inputs = self._resolve_inputs(entry, scope, loc, f"node '{full}'")
        if len(inputs) < lo or (hi is not None and len(inputs) > hi):
            want = f"{lo}" if lo == hi else (f"{lo} to {hi}" if hi is not None else f"at least {lo}")
            raise SpecError(f"op '{op_name}' takes {want} input(s) ({', '.join(op.inputs) or 'none'}), "
                            f"got {len(inputs)}", where(entry, "inputs") if "inputs" in entry else loc)
        raw = {k: self._sub(v, scope, entry.where(k)) for k, v in entry.items() if k not in NODE_FIELDS}
        attrs = parse_attrs(op, raw, {k: entry.where(k) for k in raw}, self.dims, loc, full)
        in_types = [TType(self.tensors[t].shape, self.tensors[t].dtype) for t in inputs]
        ctx = dict(attrs, _dtype=self.dtype)
        try:
            out_types = op.infer(ctx, in_types)
            params = op.params(ctx, in_types) if op.params else {}
        except OpError as exc:
            raise SpecError(f"{op_name} '{full}': {exc}", _blame(entry, raw, str(exc), loc)) from None
        weights = self._node_weights(entry, scope, full, op_name, params, loc)
        outputs = self._node_outputs(entry, scope, local, full, len(out_types), loc, set(weights.values()))
        for tid, ttype in zip(outputs, out_types):
            if tid in self.tensors:
                raise SpecError(f"node '{full}' would compute tensor '{tid}', which is already "
                                + self._describe(tid), where(entry, "name") if "name" in entry else loc)
            self._check_size(ttype.shape, loc, f"output of '{full}'")
            self.tensors[tid] = Tensor(tid, tuple(ttype.shape), ttype.dtype, loc=loc)
        self.nodes.append(Node(full, op_name, inputs, outputs, attrs, weights, loc))
        scope.prev = outputs[0] if len(outputs) == 1 else None
        scope.prev_node = f"'{full}'"
        if len(outputs) > 1:
            scope.prev_hint = next(k for k, v in scope.names.items() if v == outputs[0] and k != local)

    def _node_weights(self, entry, scope, full, op_name, params, loc) -> dict:
        overrides = {}
        if "weights" in entry:
            overrides = expect_map(entry["weights"], where(entry, "weights"), f"weights of '{full}'")
            for role in overrides:
                if role not in params:
                    raise SpecError(f"op '{op_name}' has no weight '{role}'" + did_you_mean(role, params)
                                    + f"; its weights: {', '.join(params) or 'none'}",
                                    overrides.key_loc[role])
        weights = {}
        for role, spec in params.items():
            if role in overrides:
                wname = self._sub(overrides[role], scope, overrides.where(role))
                self._check_name(wname, overrides.where(role), "weight")
                wname = scope.prefix + wname
            else:
                wname = full if op_name == "parameter" else f"{full}.{role}"
            shape = tuple(spec.shape)
            if not all(d.is_static for d in shape):
                raise SpecError(f"weight '{wname}' would have symbolic shape {shape_str(shape)}", loc)
            dtype = spec.dtype or self.dtype
            existing = self.tensors.get(wname)
            if existing is not None:
                if existing.kind != WEIGHT:
                    raise SpecError(f"weight '{wname}' of node '{full}' has the name of "
                                    + self._describe(wname) + "; rename one of them", loc)
                if existing.shape != shape:
                    raise SpecError(f"weight '{wname}' is used with shape {shape_str(shape)} here and "
                                    f"{shape_str(existing.shape)} at {existing.loc}", loc)
            else:
                total = numel(shape).value
                if total > MAX_WEIGHT_ELEMENTS:
                    raise SpecError(f"weight '{wname}' would hold {total} elements; the limit is "
                                    f"{MAX_WEIGHT_ELEMENTS}", loc)
                self.tensors[wname] = Tensor(wname, shape, dtype, WEIGHT, loc, spec.init)
            weights[role] = wname
        return weights

    def _node_outputs(self, entry, scope, local, full, count, loc, own_weights) -> list:
        if "outputs" in entry:
            names = expect_list(entry["outputs"], where(entry, "outputs"), f"outputs of '{full}'")
            if len(names) != count:
                raise SpecError(f"node '{full}' has {count} output(s), 'outputs' names {len(names)}",
                                where(entry, "outputs"))
            result = []
            for i, oname in enumerate(names):
                oname = self._sub(oname, scope, names.where(i))
                self._check_name(oname, names.where(i), "output")
                if oname in scope.names:
                    raise SpecError(f"output name '{oname}' is already defined", names.where(i))
                tid = scope.prefix + oname
                scope.names[oname] = tid
                result.append(tid)
            scope.names.setdefault(local, result[0])
            return result
        if count == 1:
            tid = f"{full}:0" if full in own_weights else full  # 'parameter': the weight has the name
            scope.names[local] = tid
            return [tid]
        result = [f"{full}:{i}" for i in range(count)]
        for i, tid in enumerate(result):
            scope.names[f"{local}:{i}"] = tid
        return result

    def _describe(self, tid: str) -> str:
        tensor = self.tensors[tid]
        what = {INPUT: "a model input", WEIGHT: "a weight"}.get(tensor.kind, "a tensor")
        return f"{what} (defined at {tensor.loc})"

    def _check_size(self, shape, loc, what) -> None:
        if not shape:
            return
        _, hi = bounds(numel(shape), self.dims)
        if hi > MAX_TENSOR_ELEMENTS:
            raise SpecError(f"{what} would hold {hi} elements at the largest dims; the limit is "
                            f"{MAX_TENSOR_ELEMENTS} (2^40)", loc)

    # -- blocks ---------------------------------------------------------------------------------
    def _block_use(self, entry: YMap, scope: Scope, loc: Location) -> None:
        check_keys(entry, BLOCK_USE_FIELDS, "a block use")
        bname = self._sub(entry["block"], scope, where(entry, "block"))
        block = self.library.get(bname, where(entry, "block"))
        if bname in scope.blocks:
            chain = " -> ".join(scope.blocks + (bname,))
            raise SpecError(f"block '{bname}' uses itself ({chain})", where(entry, "block"))
        repeat = self._sub(entry.get("repeat", 1), scope, where(entry, "repeat"))
        if not isinstance(repeat, int) or isinstance(repeat, bool) or not 1 <= repeat <= MAX_REPEAT:
            raise SpecError(f"'repeat' must be an integer from 1 to {MAX_REPEAT}, got {shown(repeat)}",
                            where(entry, "repeat"))
        local = self._node_name(entry, scope, bname, loc)
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
        self._check_growth(repeat * self._min_nodes(block), bname, repeat, entry, loc)
        outputs, start = [], len(self.nodes)
        for i in range(repeat):
            prefix = scope.prefix + local + (f".{i}" if "repeat" in entry else "") + "."
            env = self._block_env(block, args, dict(scope.env, i=i), loc)
            inner = Scope(prefix=prefix, names=dict(zip(block.inputs, inputs)), env=dict(env, i=i),
                          prev=inputs[0], prev_node=f"block input '{block.inputs[0]}'",
                          blocks=scope.blocks + (bname,))
            try:
                self._entries(block.graph, inner)
                outputs = self._block_outputs(block, inner)
            except SpecError as exc:  # the cause is often an argument given at the use site
                exc.add_note(f"in block '{bname}' used as '{prefix[:-1]}'", loc)
                raise
            inputs = [outputs[0]] + inputs[1:]
            if i == 0:  # now the size of one instance is known
                self._check_growth(repeat * (len(self.nodes) - start), bname, repeat, entry, loc, start)
        scope.names[local] = outputs[0]
        for oname, tid in zip(block.outputs or [], outputs):
            scope.names[f"{local}:{oname}"] = tid
        scope.prev, scope.prev_node = outputs[0], f"block '{scope.prefix + local}'"

    def _check_growth(self, adds, bname, repeat, entry, loc, start=None) -> None:
        """Fail before expanding a block use that would pass MAX_NODES, not after minutes."""
        total = (len(self.nodes) if start is None else start) + adds
        if total > MAX_NODES:
            raise SpecError(f"block '{bname}' repeated {repeat} time(s) makes the model at least "
                            f"{total} nodes; the limit is {MAX_NODES}",
                            where(entry, "repeat") if "repeat" in entry else loc)

    def _min_nodes(self, block: BlockDef) -> int:
        """A lower bound of the nodes one instance of `block` adds (literal repeats, no 'when')."""
        if block.name not in self.min_nodes_cache:
            self.min_nodes_cache[block.name] = 0  # a block that uses itself is reported elsewhere
            total = 0
            for entry in block.graph:
                if not isinstance(entry, YMap) or "when" in entry:
                    continue
                inner = self.library.blocks.get(entry.get("block")) if isinstance(entry.get("block"), str) else None
                if inner is None:
                    total += "op" in entry
                    continue
                repeat = entry.get("repeat", 1)
                valid = isinstance(repeat, int) and not isinstance(repeat, bool) and 1 <= repeat <= MAX_REPEAT
                total += (repeat if valid else 1) * self._min_nodes(inner)
            self.min_nodes_cache[block.name] = total
        return self.min_nodes_cache[block.name]

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


def op_for_entry(op_name, entry: YMap, ops: dict):
    """The op row a graph entry names, with the entry's keys checked against it."""
    if not isinstance(op_name, str) or op_name not in ops:
        raise SpecError(f"unknown op '{op_name}'" + did_you_mean(op_name, ops), where(entry, "op"))
    op = ops[op_name]
    attrs = [a.name for a in op.attrs]
    for key in entry:
        if key not in NODE_FIELDS and key not in attrs:
            raise SpecError(f"op '{op_name}' has no attribute '{key}'"
                            + did_you_mean(key, list(NODE_FIELDS) + attrs)
                            + (f"; its attributes: {', '.join(attrs)}" if attrs else ""), entry.key_loc[key])
    check_docs(entry, f"node of op '{op_name}'")
    return op


def _names_defined(entries) -> dict:
    """Literal node and output names in a graph list, to tell 'defined later' from 'undefined'."""
    found: dict = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, YMap):
            continue
        outputs = entry.get("outputs")
        for name in [entry.get("name")] + (list(outputs) if isinstance(outputs, YList) else []):
            if isinstance(name, str) and "$" not in name:
                found.setdefault(name, entries.where(i))
    return found


def _blame(entry: YMap, attrs: dict, message: str, loc: Location) -> Location:
    """Where a shape error points: the first attribute the message quotes, else the node."""
    quoted = [(message.find(f"'{name}'"), name) for name in attrs if f"'{name}'" in message]
    return entry.where(min(quoted)[1]) if quoted else loc


def load_model(path: str, weights: str | None = None) -> Graph:
    """Read a model spec file into a shape-checked Graph (raises SpecError with a location).
    `weights` names a safetensors file that replaces the spec's `weights` field."""
    doc = check_header(load_yaml(path), path, "Model")
    return ModelBuilder(path, doc, weights).build()
