"""Model spec -> Graph: field checks, inputs, op nodes with implicit chaining and names, shape
inference with located errors, weight naming. Block uses are expanded by expand.py; dims and the
weights source are parsed by model_fields.py."""

from __future__ import annotations

from ait_build.errors import Location, OpError, SpecError, did_you_mean, shown
from ait_build.ir.dims import Dim, bounds, numel, shape_str
from ait_build.ir.dtypes import ALL_DTYPES, FLOAT_DTYPES
from ait_build.ir.graph import INPUT, WEIGHT, Graph, Node, Tensor, verify
from ait_build.ops.opdef import TType
from ait_build.ops.registry import all_ops
from ait_build.spec.attrs import parse_attrs
from ait_build.spec.blocks import BlockLibrary
from ait_build.spec.expand import MAX_NODES, BlockExpander, Scope
from ait_build.spec.expr import substitute
from ait_build.spec.fields import (check_docs, check_header, check_keys, expect_list, expect_map, get,
                                   type_name)
from ait_build.spec.model_fields import MAX_DIM, open_weights, parse_dims
from ait_build.spec.names import IDENTIFIER, check_model_name, check_name
from ait_build.spec.source import parse_source
from ait_build.spec.yamlfile import YList, YMap, load_yaml, where, ylist

MODEL_FIELDS = ("apiVersion", "kind", "name", "description", "dtype", "dims", "inputs", "outputs",
                "weights", "include", "blocks", "graph", "source")
NODE_FIELDS = ("name", "op", "inputs", "outputs", "when", "weights", "doc")
MAX_TENSOR_ELEMENTS = 2**40
MAX_RANK = 32  # NumPy 1's most dims (NumPy 2: 64): the runtime hands every tensor to NumPy
MAX_WEIGHT_ELEMENTS = 2**32
MAX_WEIGHTS_BYTES = 2**36  # all weights together, at 4 bytes per element
# dim expressions (concat sums dims, reshape multiplies them): real models use 2 terms of degree 2;
# without a bound a short spec multiplies sums into polynomials of thousands of terms, which the
# generated sources print at every use (megabytes of C++ for the compiler)
MAX_DIM_TERMS = 8
MAX_DIM_DEGREE = 6
MAX_NUMEL_TERMS = 64


class ModelBuilder(BlockExpander):
    def __init__(self, path: str, doc: YMap, weights_override: str | None = None):
        self.weights_override = weights_override
        self.path = path
        self.doc = doc
        self.dtype = "float32"
        self.dims: dict = {}
        self.tensors: dict = {}
        self.nodes: list = []
        self.node_names: dict = {}
        self.library = BlockLibrary()
        self.ops = {k: v for k, v in all_ops().items() if not v.internal}
        self.min_size_cache: dict = {}
        self.entries_seen = 0
        self.weight_elements = 0

    # -- top level ------------------------------------------------------------------------------
    def build(self) -> Graph:
        doc = self.doc
        check_keys(doc, MODEL_FIELDS, "a model spec", required=("name", "inputs", "graph", "outputs"))
        name = get(doc, "name", str, "the model")
        check_model_name(name, where(doc, "name"))
        self.dtype = get(doc, "dtype", str, "the model", default="float32")
        if self.dtype not in FLOAT_DTYPES:
            raise SpecError(f"model dtype must be one of {', '.join(FLOAT_DTYPES)}, got "
                            f"{shown(self.dtype)}"
                            + did_you_mean(self.dtype, FLOAT_DTYPES), where(doc, "dtype"))
        self.dims = parse_dims(doc)
        parse_source(doc)  # checked here; bench reads it (spec/source.py)
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
        weights = [t for t in self.tensors.values() if t.kind == WEIGHT]
        graph.weights = open_weights(doc, self.path, self.weights_override,
                                     {t.name: (tuple(d.value for d in t.shape), t.init) for t in weights},
                                     {t.name: t.dtype for t in weights})
        graph.remove_unused_tensors()
        verify(graph)
        return graph

    def _inputs(self, doc, scope) -> list:
        inputs = expect_map(doc["inputs"], where(doc, "inputs"), "inputs")
        if not inputs:
            raise SpecError("inputs is empty", where(doc, "inputs"))
        names = []
        for iname, spec in inputs.items():
            loc = inputs.key_loc[iname]
            check_name(iname, loc, "input")
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
                elif isinstance(d, str) and not IDENTIFIER.fullmatch(d.strip()):
                    shape.append(self._input_size(iname, d, shape_list.where(i)))
                elif isinstance(d, str):
                    if d not in self.dims:
                        raise SpecError(f"input '{iname}': unknown dim {shown(d)}"
                                        + did_you_mean(d, self.dims)
                                        + ("" if self.dims else "; declare it under 'dims'"),
                                        shape_list.where(i))
                    shape.append(Dim.of(d))
                else:
                    raise SpecError(f"input '{iname}': a shape entry must be an integer, a dim name "
                                    f"or an expression of dims, got {type_name(d)}",
                                    shape_list.where(i))
            dtype = get(spec, "dtype", str, f"input '{iname}'", default=self.dtype)
            if dtype not in ALL_DTYPES:
                raise SpecError(f"unknown dtype {shown(dtype)}" + did_you_mean(dtype, ALL_DTYPES),
                                where(spec, "dtype"))
            self._check_size(tuple(shape), loc, f"input '{iname}'")
            self.tensors[iname] = Tensor(iname, tuple(shape), dtype, INPUT, loc)
            scope.names[iname] = iname
            names.append(iname)
        scope.prev = names[0]
        scope.prev_node = f"input '{names[0]}'"
        return names

    def _input_size(self, iname: str, text: str, loc) -> Dim:
        """A size written as an expression of dims (`320*frames + 80`: an audio length the
        strides of a feature encoder divide), its coefficients positive so that it grows with
        its dims."""
        try:
            size = Dim.parse(text, self.dims)
        except ValueError as exc:
            raise SpecError(f"input '{iname}': {exc}", loc) from None
        if size.may_be_negative or size.is_static:
            raise SpecError(f"input '{iname}': a size expression has dims and no negative "
                            f"coefficient, got {shown(text)} ({size})", loc)
        return size

    def _outputs(self, doc, scope) -> list:
        outputs = expect_list(doc["outputs"], where(doc, "outputs"), "outputs")
        if not outputs:
            raise SpecError("outputs is empty", where(doc, "outputs"))
        result, listed, renamed = [], {}, {}  # tensor -> the output name that listed it first
        for i, oname in enumerate(outputs):
            loc = outputs.where(i)
            if not isinstance(oname, str):
                raise SpecError(f"outputs must be tensor names, got {type_name(oname)}", loc)
            if oname in renamed or scope.names.get(oname) in renamed:  # listed under another name
                tid = renamed.get(oname) or renamed[scope.names[oname]]
            elif oname not in scope.names and oname in self.tensors \
                    and self.tensors[oname].kind not in (INPUT, WEIGHT):
                tid = oname  # a tensor inside a block, by its full name: 'layers.1.fc1'
            else:
                tid = self._lookup(oname, scope, loc)
            if tid in self.tensors and self.tensors[tid].kind == INPUT:
                raise SpecError(f"output '{oname}' is a model input; outputs must be computed", loc)
            if tid in listed:
                raise SpecError(f"output '{oname}' is listed twice" + (
                    f" (as '{listed[tid]}' too: the same tensor)" if listed[tid] != oname else ""), loc)
            if tid == f"{oname}:0" and self.tensors.get(oname) is not None \
                    and self.tensors[oname].kind == WEIGHT:  # it would come out as 'NAME:0'
                raise SpecError(f"output '{oname}' is a parameter node, whose weight has the name "
                                f"'{oname}'; name its output for the model's outputs: "
                                f"{{name: {oname}, op: parameter, ..., outputs: [{oname}_out]}}", loc)
            if tid != oname and oname not in self.tensors:
                self._rename(tid, oname)  # an output is reachable under the name the user gave it
                renamed[tid] = oname
                tid = oname
            listed[tid] = oname
            result.append(tid)
        return result

    def _rename(self, old: str, new: str) -> None:
        self.tensors[new] = self.tensors.pop(old)
        self.tensors[new].name = new
        for n in self.nodes:
            n.inputs = [new if t == old else t for t in n.inputs]
            n.outputs = [new if t == old else t for t in n.outputs]

    # -- graph entries --------------------------------------------------------------------------
    def _entries(self, entries: YList, scope: Scope) -> None:
        scope.later = _names_defined(entries)
        for i, entry in enumerate(entries):
            loc = entries.where(i)
            self._count_entry(loc)
            entry = expect_map(entry, loc, "a graph entry")
            if "when" in entry:
                cond = self._sub(entry["when"], scope, where(entry, "when"))
                if not isinstance(cond, bool):
                    raise SpecError(f"'when' must be true or false, got {type_name(cond)}",
                                    where(entry, "when"))
                if not cond:
                    scope.dropped.append(entry)  # its names are looked at only by an error
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
            check_name(name, where(entry, "name"), "node")
            return name
        count = scope.counters.get(kind, 0)
        scope.counters[kind] = count + 1
        return kind if count == 0 else f"{kind}_{count}"

    def _claim(self, full: str, loc: Location) -> None:
        if full in self.node_names:
            raise SpecError(f"duplicate node name '{full}' (first defined at {self.node_names[full]})",
                            loc)
        if len(self.nodes) >= MAX_NODES:
            raise SpecError(f"the model has more than {MAX_NODES} nodes", loc)
        self.node_names[full] = loc

    def _lookup(self, name, scope: Scope, loc: Location) -> str:
        if not isinstance(name, str):
            raise SpecError(f"an input must be a tensor name, got {type_name(name)}", loc)
        if name in scope.names:
            return scope.names[name]
        base = name.split(":")[0]
        dropped = next((e for e in scope.dropped if base in _entry_names(e)), None)
        if dropped is not None:
            raise SpecError(f"tensor {shown(name)} is not computed: 'when' drops the entry that "
                            f"defines it (line {where(dropped, 'when').line})", loc)
        later = scope.later.get(base)
        if later is not None and not any(k == base or k.startswith(base + ":") for k in scope.names):
            raise SpecError(f"tensor {shown(name)} is used before the node that computes it (line "
                            f"{later.line}); graphs run top to bottom, so a cycle cannot be written",
                            loc)
        hint = did_you_mean(name, scope.names)
        raise SpecError(f"undefined tensor {shown(name)}" + (hint or (
            " (tensors must be defined before use; graphs run top to bottom, so cycles cannot "
            "be written)" if scope.names else "")), loc)

    def _resolve_inputs(self, entry, scope: Scope, loc: Location, what: str) -> list:
        if "inputs" not in entry:
            if scope.prev is None and not scope.prev_hint:
                raise SpecError(f"{what} has no 'inputs' and nothing before it to read "
                                f"({scope.prev_node}); name its inputs", loc)
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
        try:
            out_types = op.infer_types(attrs, in_types, self.dtype)
            if op.check_ranges:
                op.check_ranges(attrs, in_types, self.dims)
            params = op.params(attrs, in_types) if op.params else {}
        except OpError as exc:
            raise SpecError(f"{op_name} '{full}': {exc}", _blame(entry, raw, str(exc), loc)) from None
        weights = self._node_weights(entry, scope, full, op_name, params, loc)
        outputs = self._node_outputs(entry, scope, local, full, len(out_types), loc,
                                     set(weights.values()))
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
            scope.prev_hint = next((k for k, v in scope.names.items()
                                    if v == outputs[0] and k != local), local)

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
                # '/NAME' names a weight from the model's root: a block's use of a model-wide
                # parameter (a position table) or a weight tied across blocks
                rooted = isinstance(wname, str) and wname.startswith("/")
                wname = wname[1:] if rooted else wname
                check_name(wname, overrides.where(role), "weight")
                wname = wname if rooted else scope.prefix + wname
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
                if existing.dtype != dtype:
                    raise SpecError(f"weight '{wname}' is used as {dtype} here and as "
                                    f"{existing.dtype} at {existing.loc}", loc)
            else:
                total = numel(shape).value
                if total > MAX_WEIGHT_ELEMENTS:
                    raise SpecError(f"weight '{wname}' would hold {total} elements; the limit is "
                                    f"{MAX_WEIGHT_ELEMENTS} (2^32)", loc)
                self.weight_elements += total
                if self.weight_elements * 4 > MAX_WEIGHTS_BYTES:
                    raise SpecError(f"the weights up to '{wname}' would take more than "
                                    f"{MAX_WEIGHTS_BYTES >> 30} GiB; that is the limit", loc)
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
                check_name(oname, names.where(i), "output")
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
        if len(shape) > MAX_RANK:
            raise SpecError(f"{what} would have rank {len(shape)}; the limit is {MAX_RANK}", loc)
        terms = 1
        for d in shape:
            if len(d.terms) > MAX_DIM_TERMS or any(len(m) > MAX_DIM_DEGREE for m, _ in d.terms):
                raise SpecError(f"{what} would have size {shown(str(d))}, a dim expression of "
                                f"{len(d.terms)} terms; the limit is {MAX_DIM_TERMS} terms of "
                                f"degree {MAX_DIM_DEGREE}", loc)
            terms *= len(d.terms)
        if terms > MAX_NUMEL_TERMS:
            raise SpecError(f"{what} would have shape {shown(shape_str(shape))}, whose element count "
                            f"expands to more than {MAX_NUMEL_TERMS} terms", loc)
        for d in shape:
            if not d.is_static and max(bounds(d, self.dims)) < 1:
                raise SpecError(f"{what} would have size {shown(str(d))}, which is below 1 at "
                                "every value of its dims", loc)
        _, hi = bounds(numel(shape), self.dims)
        if hi > MAX_TENSOR_ELEMENTS:
            raise SpecError(f"{what} would hold {hi} elements at the largest dims; the limit is "
                            f"{MAX_TENSOR_ELEMENTS} (2^40)", loc)

def op_for_entry(op_name, entry: YMap, ops: dict):
    """The op row a graph entry names, with the entry's keys checked against it."""
    if not isinstance(op_name, str) or op_name not in ops:
        raise SpecError(f"unknown op {shown(op_name)}" + did_you_mean(op_name, ops), where(entry, "op"))
    op = ops[op_name]
    attrs = [a.name for a in op.attrs]
    for key in entry:
        if key not in NODE_FIELDS and key not in attrs:
            raise SpecError(f"op '{op_name}' has no attribute '{key}'"
                            + did_you_mean(key, list(NODE_FIELDS) + attrs)
                            + (f"; its attributes: {', '.join(attrs)}" if attrs else ""),
                            entry.key_loc[key])
    check_docs(entry, f"node of op '{op_name}'")
    return op


def _names_defined(entries) -> dict:
    """Literal node and output names in a graph list, to tell 'defined later' from 'undefined'."""
    found: dict = {}
    for i, entry in enumerate(entries):
        if isinstance(entry, YMap):
            for name in _entry_names(entry):
                found.setdefault(name, entries.where(i))
    return found


def _entry_names(entry: YMap) -> list:
    """The literal names an entry defines: its own and its `outputs:`."""
    outputs = entry.get("outputs")
    names = [entry.get("name")] + (list(outputs) if isinstance(outputs, YList) else [])
    return [name for name in names if isinstance(name, str) and "$" not in name]


def _blame(entry: YMap, attrs: dict, message: str, loc: Location) -> Location:
    """Where a shape error points: the first attribute the message quotes, else the node."""
    quoted = [(message.find(f"'{name}'"), name) for name in attrs if f"'{name}'" in message]
    return entry.where(min(quoted)[1]) if quoted else loc


def load_model(path: str, weights: str | None = None) -> Graph:
    """Read a model spec file into a shape-checked Graph (raises SpecError with a location).
    `weights` names a safetensors file that replaces the spec's `weights` field."""
    doc = check_header(load_yaml(path), path, "Model")
    return ModelBuilder(path, doc, weights).build()
