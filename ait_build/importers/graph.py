"""The graph an importer builds: our ops, named after the source model's modules, with shapes from
the op registry and the source's layouts tracked lazily.

PyTorch and ONNX models are NCHW; our convs and pools are NHWC. Each value remembers `perm`, how
its stored tensor is a permutation of the source tensor (`ours = source.permute(perm)`). A source
permute/transpose only changes `perm` (no node); an op that needs the source layout, or another
one, gets a `permute` node then (cached per value and layout). So a conv's output stays NHWC
through activations, adds and pools, ConvNeXt's permute to channels-last and back costs nothing,
and `q @ k.transpose(-2, -1)` becomes a matmul with `transpose_b`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np

from ait_build.errors import AitError, OpError
from ait_build.ir.dims import Dim, shape_str
from ait_build.ir.dtypes import FLOAT_DTYPES, from_numpy
from ait_build.ops.opdef import TType
from ait_build.ops.registry import get_op
from ait_build.passes.rewrite import inverse_dims

NHWC = (0, 2, 3, 1)  # ours = source.permute(NHWC) for a 4-d NCHW source
NAME_OK = re.compile(r"[^A-Za-z0-9_.\-]")
MAX_NAME = 190  # the spec's 200 (spec/names.py), less room for fresh()'s `_N` suffixes


def capped(name: str) -> str:
    """`name`, or its start and a hash of the whole when it is longer than a spec name may be."""
    if len(name) <= MAX_NAME:
        return name
    return f"{name[:MAX_NAME - 17]}_{hashlib.sha256(name.encode()).hexdigest()[:16]}"


class ImportFailure(AitError):
    """An import that cannot finish; `problems` lists every unsupported op with its location."""

    def __init__(self, message: str, problems: list | None = None):
        self.problems = list(problems or [])
        text = message + "".join(f"\n  {p}" for p in self.problems)
        super().__init__(text)


def registrar(table: dict):
    """`@handles("Conv", ...)`: a decorator filing a frontend's handler under source op names."""
    def handles(*names):
        def register(fn):
            for name in names:
                table[name] = fn
            return fn
        return register
    return handles


def identity(rank: int) -> tuple:
    return tuple(range(rank))


@dataclass
class Value:
    """A tensor of the source model as we hold it."""

    ref: str  # how the spec names it: a node name, 'node:1', an input
    shape: tuple  # our shape (Dims): the source shape permuted by `perm`
    dtype: str
    perm: tuple  # ours = source.permute(perm)
    views: dict = field(default_factory=dict)  # perm -> Value of the same tensor in that layout

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def source_shape(self) -> tuple:
        inv = inverse_dims(self.perm)
        return tuple(self.shape[inv[i]] for i in range(self.rank))

    @property
    def plain(self) -> bool:
        return self.perm == identity(self.rank)


@dataclass
class Node:
    name: str
    op: str
    inputs: list  # refs
    attrs: dict  # non-default attributes, as the spec writes them
    weights: dict  # role -> weight name (full, from the model's root)
    outputs: list  # refs of the outputs ([name] or [name:0, name:1, ...])
    path: str  # the source module this node came from ('layer1.0'), '' at the root
    where: str  # the source location, for messages


class ImportGraph:
    """Nodes, values, weights and dims of a model being imported."""

    def __init__(self, name: str, dtype: str = "float32"):
        self.name = name
        self.dtype = dtype  # the model dtype; source float32 becomes this
        self.dims: dict = {}  # name -> (min, max, opt)
        self.inputs: list = []  # (name, Value)
        self.outputs: list = []  # refs
        self.nodes: list = []
        self.weights: dict = {}  # name -> ndarray (source layout)
        self.taken: set = set()  # node and weight names in use
        self.values: dict = {}  # ref -> Value (what spec-level names hold)
        self.problems: list = []  # unsupported ops: 'where: what'
        self.classes: dict = {}  # module path -> class name, for naming blocks
        self.inverses: dict = {}  # ref of a permutation (a sort's order) -> Value of its inverse

    # -- names ------------------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        base = capped(NAME_OK.sub("_", base).strip(".") or "node")
        name, i = base, 1
        while name in self.taken:
            name = f"{base}_{i}"
            i += 1
        self.taken.add(name)
        return name

    def unsupported(self, where: str, what: str) -> None:
        self.problems.append(f"{where}: {what}")

    # -- inputs, weights --------------------------------------------------------------------------
    def add_input(self, name: str, shape: tuple, dtype: str) -> Value:
        self.taken.add(name)
        value = Value(name, tuple(Dim.of(d) for d in shape), dtype, identity(len(shape)))
        self.inputs.append((name, value))
        self.values[name] = value
        return value

    def add_weight(self, name: str, array: np.ndarray) -> str:
        """Stores a weight under `name` (the state_dict name) or, if taken, a fresh one."""
        if name in self.weights and self.weights[name] is array:
            return name
        name = self.fresh(name)
        self.weights[name] = array
        return name

    def parameter(self, weight: str, path: str, where: str) -> Value:
        """A stored weight used as a tensor (nn.Parameter, a buffer, a folded constant)."""
        array = self.weights[weight]
        dtype = self.dtype_of(array)
        attrs = {"shape": list(array.shape) or [1]}
        if dtype != self.dtype:
            attrs["dtype"] = dtype
        node = Node(weight, "parameter", [], attrs, {}, [weight], path, where)
        if array.ndim == 0:  # our tensors have rank >= 1
            self.weights[weight] = array.reshape(1)
        self.nodes.append(node)
        out = self._infer(node, [])[0]
        value = Value(weight, out.shape, out.dtype, identity(len(out.shape)))
        self.values[weight] = value
        return value

    def constant(self, array: np.ndarray, path: str, hint: str, where: str) -> Value:
        """A folded constant used by a run-time op: a weight of its own, read by a parameter."""
        base = f"{path}.{hint}" if path else hint
        return self.parameter(self.add_weight(base, np.ascontiguousarray(array)), path, where)

    def dtype_of(self, array: np.ndarray) -> str:
        dtype = from_numpy(array.dtype) if array.dtype != np.float64 else "float32"
        if dtype is None:
            raise AitError(f"weights of dtype {array.dtype} are not supported")
        return self.dtype if dtype in FLOAT_DTYPES else dtype

    # -- nodes ------------------------------------------------------------------------------------
    def emit(self, op: str, inputs: list, attrs: dict | None = None, *, path: str, hint: str,
             where: str, name: str | None = None, weights: dict | None = None,
             outputs: int = 1, perm: tuple | None = None):
        """Adds a node of our op `op` reading `inputs` (Values in the layout the op needs);
        `weights` maps roles to weight names. Returns its Value (or Values), whose layout is
        `perm` relative to the source tensor (default: plain)."""
        if name is not None:  # the module's own name, or name_1, ... for its later calls
            node_name = self.fresh(name)
        else:
            node_name = self.fresh(f"{path}.{hint}" if path else hint)
        refs = [node_name] if outputs == 1 else [f"{node_name}:{i}" for i in range(outputs)]
        node = Node(node_name, op, [v.ref for v in inputs], dict(attrs or {}), dict(weights or {}),
                    refs, path, where)
        types = self._infer(node, inputs)
        self._check_weights(node, inputs)
        self.nodes.append(node)
        values = []
        for ref, t in zip(refs, types):
            p = perm if perm is not None else identity(len(t.shape))
            value = Value(ref, tuple(t.shape), t.dtype, tuple(p))
            self.values[ref] = value
            values.append(value)
        return values[0] if outputs == 1 else values

    def _attrs(self, row, node: Node) -> dict:
        """The node's attributes as the row's functions read them (the parser's forms)."""
        attrs = {a.name: a.default for a in row.attrs}
        for a in row.attrs:
            if a.name in node.attrs:
                attrs[a.name] = _attr_value(a.kind, node.attrs[a.name])
        return attrs

    def _infer(self, node: Node, inputs: list) -> list:
        row = get_op(node.op)
        attrs = self._attrs(row, node)
        try:
            return row.infer_types(attrs, [TType(v.shape, v.dtype) for v in inputs], self.dtype)
        except OpError as exc:
            raise AitError(f"{node.where}: {node.op} '{node.name}': {exc}") from None

    def _check_weights(self, node: Node, inputs: list) -> None:
        row = get_op(node.op)
        if not row.params:
            return
        attrs = self._attrs(row, node)
        specs = row.params(attrs, [TType(v.shape, v.dtype) for v in inputs])
        for role, spec in specs.items():
            wname = node.weights.get(role)
            if wname is None:
                raise AitError(f"{node.where}: {node.op} '{node.name}' has no '{role}' weight")
            want = tuple(d.value for d in spec.shape)
            got = tuple(self.weights[wname].shape)
            if want != got:
                raise AitError(f"{node.where}: weight '{wname}' has shape {list(got)}, "
                               f"{node.op} '{node.name}' needs {list(want)}")

    # -- layouts ----------------------------------------------------------------------------------
    def with_perm(self, value: Value, perm: tuple, path: str, where: str) -> Value:
        """`value` stored as source.permute(perm): itself, a cached view, or a new permute."""
        perm = tuple(perm)
        if value.perm == perm:
            return value
        if perm in value.views:
            return value.views[perm]
        # ours_new = source.permute(perm) = ours.permute(inverse_dims(value.perm)).permute(perm)
        inv = inverse_dims(value.perm)
        step = tuple(inv[p] for p in perm)
        shape = tuple(value.shape[s] for s in step)
        moved = [d for d in step if not value.shape[d] == 1]
        if moved == sorted(moved):  # only size-1 dims move: the same bytes, a reshape
            out = self.emit("reshape", [value], {"shape": shape_attr(shape, value.shape)},
                            path=path, hint="reshape", where=where, perm=perm)
        else:
            hint = "nhwc" if perm == NHWC else "nchw" if perm == identity(len(perm)) else "permute"
            out = self.emit("permute", [value], {"dims": list(step)}, path=path, hint=hint,
                            where=where, perm=perm)
        value.views[perm] = out
        out.views[value.perm] = value
        return out

    def source(self, value: Value, path: str, where: str) -> Value:
        return self.with_perm(value, identity(value.rank), path, where)

    def relabel(self, value: Value, perm: tuple) -> Value:
        """The same stored tensor seen as a different source tensor (a source permute)."""
        return Value(value.ref, value.shape, value.dtype, tuple(perm))

    def broadcast_to_layout(self, value: Value, rank: int, perm: tuple, path: str,
                            where: str) -> Value:
        """A lower-rank operand of a broadcasting op whose other operand has rank `rank` and
        layout `perm`: unsqueezed to that rank (leading 1s, as broadcasting does), then laid out."""
        if value.rank == rank:
            return self.with_perm(value, perm, path, where)
        plain = self.source(value, path, where)
        shape = (Dim.of(1),) * (rank - value.rank) + tuple(plain.shape)
        grown = self.emit("reshape", [plain], {"shape": shape_attr(shape, plain.shape)},
                          path=path, hint="reshape", where=where)
        return self.with_perm(grown, perm, path, where)

    def uses(self) -> dict:
        """ref -> number of reads (graph outputs count)."""
        count: dict = {}
        for node in self.nodes:
            for ref in node.inputs:
                count[ref] = count.get(ref, 0) + 1
        for ref in self.outputs:
            count[ref] = count.get(ref, 0) + 1
        return count


def _attr_value(kind: str, value):
    """An attribute as the spec parser gives it to the rows (spec/attrs.py convert)."""
    if kind == "shape":
        return tuple(Dim.of(v) for v in value)
    if kind in ("dim", "dim_or_none"):
        return None if value is None else Dim.of(value)
    if isinstance(value, list):
        return tuple(value)
    return value


def dim_attr(d: Dim):
    """A size as a spec writes it: an int or a dim name (None if neither)."""
    if d.is_static:
        return d.value
    if len(d.terms) == 1 and d.terms[0][1] == 1 and len(d.terms[0][0]) == 1:
        return d.terms[0][0][0]
    return None


def shape_attr(target: tuple, source: tuple) -> list:
    """A reshape target as spec sizes: ints and dim names, 0 where a composite dim (batch*seq)
    equals the input's dim at that position, one -1 for another composite."""
    out, unknown = [], 0
    for i, d in enumerate(target):
        simple = dim_attr(d)
        if simple is not None:
            out.append(simple)
        elif i < len(source) and source[i] == d:
            out.append(0)
        else:
            unknown += 1
            out.append(-1)
    if unknown > 1:
        raise AitError(f"cannot write the shape {shape_str(target)}: more than one size is a "
                       "product of dims")
    return out

