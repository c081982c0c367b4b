"""Kernel planning: an optimized Graph -> a ModelPlan (storage for every tensor, the weights in the
layout kernels read, the ordered kernel calls, the unique kernels).

Each node is handed to its backend's lowering function (the Backend's `lower` table) through a
`Lowerer`, which knows where tensors live and records calls. Kernels are deduplicated by their
rendered identity (kernel.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ait_build.codegen.cexpr import elements
from ait_build.codegen.kernel import Kernel, Step
from ait_build.codegen.storage import Layout, Value, align
from ait_build.codegen.tuning import TunedCall, check_candidates, finalize
from ait_build.errors import AitError
from ait_build.ir.dims import Dim
from ait_build.ir.dtypes import NUMPY
from ait_build.ir.graph import Graph
from ait_build.ops.registry import all_ops

# ops whose kernels read each element (or row) before writing it, so the memory plan may put
# their output on top of a same-sized input (besides every elementwise op)
INPLACE_SAFE = {"batch_norm", "layer_norm", "softmax"}
# GEMM-shaped ops may share their output with the residual only (the kernel accumulates onto it)
RESIDUAL_INPLACE = {"linear": 1, "matmul": 2, "bmm": 2, "conv2d": 1}  # op -> data inputs


@dataclass
class WeightSlot:
    key: str  # name in weights.safetensors
    var: str
    shape: tuple  # ints
    dtype: str  # float32 | int32 | int64 | bool
    make: Callable  # WeightStore -> ndarray in this layout


@dataclass
class IOInfo:
    name: str
    dtype: str
    shape: tuple  # Dim


@dataclass
class ModelPlan:
    graph: Graph
    target: object
    backend: object  # backends.base.Backend
    values: dict = field(default_factory=dict)  # tensor -> Value
    weights: dict = field(default_factory=dict)  # key -> WeightSlot
    steps: list = field(default_factory=list)
    kernels: dict = field(default_factory=dict)  # name -> Kernel
    layout: Layout = field(default_factory=Layout)
    notes: list = field(default_factory=list)
    # node -> what an earlier node's kernel already did of its work (e.g. a depthwise conv's
    # per-tile sums for the global average pool that reads it: backends/gpu/depthwise.py)
    handed_on: dict = field(default_factory=dict)
    _readers: dict | None = field(default=None, repr=False, compare=False)  # tensor -> readers
    _found: dict = field(default_factory=dict, repr=False, compare=False)  # memo() -> its values
    tuning: object = None  # tuning.TuningReport once finalized
    # (node, why) of calls a GPU backend runs on a plain fallback kernel (a direct conv, a tiled
    # GEMM without tensor or matrix cores): an order of magnitude slower; the build says so
    plain: list = field(default_factory=list)
    position: int = 0  # 0: input conversions, i + 1: node i, len(nodes) + 1: output conversions

    @property
    def name(self) -> str:
        return self.graph.name

    @property
    def ctypes(self) -> dict:
        """dtype -> the backend's storage type (Backend.ctypes)."""
        return self.backend.ctypes

    @property
    def io_ctypes(self) -> dict:
        return self.backend.io_ctypes

    @property
    def cname(self) -> str:
        return "ait_" + self.graph.name.replace("-", "_")

    @property
    def dims(self) -> list:
        return list(self.graph.dims.values())

    def io(self, names) -> list:
        return [IOInfo(n, self.graph.tensors[n].dtype, tuple(self.graph.tensors[n].shape))
                for n in names]

    def at_max(self, dim) -> int:
        return Dim.of(dim).eval(self.graph.bounds_env("max"))

    def readers(self, tensor: str) -> list:
        """The nodes that read `tensor`, from an index built once (lowering does not change the
        graph)."""
        if self._readers is None:
            self._readers = self.graph.consumers()
        return self._readers.get(tensor, [])

    def memo(self, key: str, find: Callable):
        """`find()` of the graph (patterns several lowerings ask about), computed once: lowering
        does not change the graph."""
        if key not in self._found:
            self._found[key] = find()
        return self._found[key]

    def scratch(self) -> tuple:
        """(shared, per-thread) scratch bytes: the largest any step needs."""
        return (max((s.scratch_shared for s in self.steps), default=0),
                max((s.scratch_thread for s in self.steps), default=0))

    def workspace_bytes(self, which: str = "max") -> int:
        """Activations at the max (or min/opt) dims plus one thread's scratch."""
        shared, per_thread = self.scratch()
        return self.layout.bytes_at(self.graph.bounds_env(which)) + align(shared) + align(per_thread)

    def unique_kernels(self) -> list:
        return [self.kernels[k] for k in sorted(self.kernels)]

    # -- storage -------------------------------------------------------------------------------
    def _new_var(self, prefix: str) -> str:
        return f"{prefix}{len(self.values) + len(self.weights)}"

    def add_value(self, tensor: str, ctype: str, init: str, kind: str, const=False, base="",
                  group=-1) -> Value:
        value = Value(tensor, self._new_var("t"), ctype, init, const, kind, base, group)
        self.values[tensor] = value
        return value

    def add_slot(self, tensor: str, ctype: str, shape) -> Value:
        group = self.layout.add(tensor, elements(shape) * self.backend.sizeof[ctype], self.position)
        return self.add_value(tensor, ctype, f"reinterpret_cast<{ctype}*>(ws + o[{group.index}])",
                              "work", group=group.index)

    def use(self, tensor: str) -> Value:
        """The tensor's value, its workspace group kept live at the current position."""
        value = self.values[tensor]
        root = self.values[value.base] if value.kind == "view" and value.base else value
        if root.group >= 0:
            self.layout.touch(root.group, self.position)
        return value

    def add_weight(self, key: str, make: Callable, shape: tuple, dtype: str) -> str:
        if key not in self.weights:
            self.weights[key] = WeightSlot(key, self._new_var("w"), tuple(int(d) for d in shape),
                                           dtype, make)
        return self.weights[key].var

    def add_step(self, step: Step) -> None:
        self.add_kernel(step.kernel)
        self.steps.append(step)

    def add_kernel(self, kernel: Kernel) -> None:
        """Registers a kernel and the parts it calls (each renders to a source of its own)."""
        known = self.kernels.setdefault(kernel.name, kernel)
        if known != kernel:
            raise AitError(f"internal: two kernels share the name {kernel.name}")
        for part in kernel.parts:
            self.add_kernel(part)


class Lowerer:
    """What one node's lowering function sees."""

    def __init__(self, plan: ModelPlan, node):
        self.plan, self.node = plan, node  # node is None for the model-edge conversions

    def plain_kernel(self, why: str) -> None:
        """Records that this node runs a plain fallback kernel, and why (ModelPlan.plain)."""
        self.plan.plain.append((self.node.name if self.node else "", why))

    # tensors
    def shape(self, tensor: str) -> tuple:
        return tuple(self.plan.graph.tensors[tensor].shape)

    def dtype(self, tensor: str) -> str:
        return self.plan.graph.tensors[tensor].dtype

    def ctype(self, tensor: str) -> str:
        return self.plan.ctypes[self.dtype(tensor)]

    def template(self, kind: str) -> str:
        """The backend's template for a kind of kernel the shared lowerings make."""
        return self.plan.backend.template(kind)

    def src(self, tensor: str) -> str:
        return self.plan.use(tensor).var

    def dst(self, tensor: str) -> str:
        """The pointer a node writes `tensor` through: the user's output buffer when its type
        matches, else a workspace slot."""
        plan = self.plan
        if tensor in plan.values:
            return plan.use(tensor).var
        graph = plan.graph
        ctype = self.ctype(tensor)
        if tensor in graph.outputs and self.plan.io_ctypes[self.dtype(tensor)] == ctype:
            index = graph.outputs.index(tensor)
            return plan.add_value(tensor, ctype, f"static_cast<{ctype}*>(out[{index}])",
                                  "output").var
        return plan.add_slot(tensor, ctype, self.shape(tensor)).var

    def view(self, out: str, base: str) -> bool:
        """Makes `out` share `base`'s storage (its readers keep the storage live); False for model
        outputs, which must be copied to the caller's buffer."""
        plan = self.plan
        if out in plan.graph.outputs or out in plan.values:
            return False
        root = plan.use(base)
        if root.kind == "view" and root.base:
            root = plan.values[root.base]
        plan.add_value(out, root.ctype, root.var, "view", const=root.const,
                       base=root.tensor if root.kind != "view" else "")
        return True

    def view_weight(self, out: str, role: str) -> bool:
        """`out` as a read-only view of one of the node's weights (the parameter op)."""
        if out in self.plan.graph.outputs:
            return False
        var = self.weight(role)
        self.plan.add_value(out, self.ctype(out), var, "view", const=True)
        return True

    def weight(self, role: str, transform: Callable | None = None, tag: str = "",
               shape: tuple | None = None, dtype: str | None = None) -> str:
        """Pointer to the node's weight `role`, re-laid out by `transform` (named by `tag`), stored
        as `dtype` (default: the backend's weight_storage for the tensor's dtype)."""
        name = self.node.weights[role]
        tensor = self.plan.graph.tensors[name]
        default = self.plan.backend.weight_storage.get(tensor.dtype, tensor.dtype)
        dtype = dtype or default
        if dtype != default:  # another storage type is another weight
            tag = f"{tag}.{dtype}" if tag else dtype
        key = f"{name}@{tag}" if tag else name
        fn = transform or (lambda a: a)
        shape = shape if shape is not None else tuple(d.value for d in tensor.shape)
        return self.plan.add_weight(key, lambda store: fn(store.get(name)), shape, dtype)

    def derived_weight(self, tag: str, make: Callable, shape: tuple) -> str:
        """A float32 array computed from several of the node's weights (e.g. batch-norm scale)."""
        key = f"{self.node.name}@{tag}"
        weights = dict(self.node.weights)
        return self.plan.add_weight(
            key, lambda store: make({r: store.get(w) for r, w in weights.items()}), shape, "float32")

    # sizes and calls
    def at_max(self, dim) -> int:
        return self.plan.at_max(dim)

    def call(self, kernel: Kernel, args: list, scratch_shared: int = 0, scratch_thread: int = 0,
             flops=0):
        self.plan.add_step(Step(self.node.name if self.node else "", kernel, tuple(str(a) for a in args),
                                int(scratch_shared), int(scratch_thread), flops=flops))

    def tuned_call(self, tunable, make, args: list, group: str, flops=0) -> None:
        """A call with several candidate configurations (codegen/tuning.py): planned with the
        heuristic's ladder; tuning.finalize swaps in the kernel its group (calls whose kernels
        differ only in configurations) shares and appends the `config` argument.
        `make(configs, ladder)` makes the kernel for a configuration list."""
        check_candidates(tunable)
        provisional = make(tunable.ladder, tuple(range(len(tunable.ladder))))
        self.plan.add_step(Step(self.node.name if self.node else "", provisional,
                                tuple(str(a) for a in args), tuning=TunedCall(tunable, make, group),
                                flops=flops))


def in_place_aliases(graph: Graph) -> tuple:
    """(out -> input it overwrites, notes): the memory plan's in-place reuses that our kernels
    allow (views need no alias: they share a pointer). Others are dropped with a note."""
    plan = graph.memory_plan
    aliases = dict(getattr(plan, "aliases", None) or {}) if plan is not None else {}
    producer = graph.producers()
    keep, notes = {}, []
    for out, src in sorted(aliases.items()):
        node = producer.get(out)
        if node is None or node.op in ("reshape", "flatten"):
            continue
        same = tuple(graph.tensors[out].shape) == tuple(graph.tensors[src].shape) and \
            graph.tensors[out].dtype == graph.tensors[src].dtype
        ok = node.op in INPLACE_SAFE or _is_elementwise(node.op) or (
            node.op in RESIDUAL_INPLACE and src in node.inputs[RESIDUAL_INPLACE[node.op]:])
        if same and ok:
            keep[out] = src
        else:
            notes.append(f"'{out}' gets its own bytes: {node.op} '{node.name}' cannot overwrite '{src}'")
    return keep, notes


def _is_elementwise(op: str) -> bool:
    row = all_ops().get(op)
    return bool(row and row.elementwise)


def plan_model(graph: Graph, target, backend, profile=None) -> ModelPlan:
    """The plan of an optimized graph on `backend` (the target's). Tuned calls get their
    configurations from `profile` (a tuning.Profile: the target's profile_cache, read by the
    caller); None leaves them unfinalized, for `ait-build profile` (tuning.tunables)."""
    aliases, notes = in_place_aliases(graph)
    plan = ModelPlan(graph=graph, target=target, backend=backend, layout=Layout(aliases),
                     notes=notes)
    backend.lower_inputs(plan)
    for i, node in enumerate(graph.nodes):
        lower = backend.lower.get(node.op)
        if lower is None:
            raise AitError(f"{node.loc}: the {backend.name} backend has no kernel for op "
                           f"'{node.op}' (node '{node.name}')")
        plan.position = i + 1
        lower(Lowerer(plan, node))
    plan.position = len(graph.nodes) + 1
    backend.lower_outputs(plan)
    if profile is not None:
        plan.tuning = finalize(plan, profile)
    return plan


def weight_arrays(plan: ModelPlan) -> dict:
    """key -> contiguous array, in the layout and dtype the kernels read."""
    out = {}
    for key, slot in sorted(plan.weights.items()):
        # asarray, not ascontiguousarray: that makes a rank-0 weight (a scalar parameter) [1]
        arr = np.asarray(slot.make(plan.graph.weights), dtype=NUMPY[slot.dtype], order="C")
        if tuple(arr.shape) != slot.shape:
            raise AitError(f"internal: weight '{key}' came out {list(arr.shape)}, "
                           f"planned {list(slot.shape)}")
        out[key] = arr
    return out
