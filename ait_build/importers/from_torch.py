"""PyTorch -> ImportGraph: load a module from a factory, export it with torch.export (symbolic
dims from the --input shapes), fold the parts that depend on no input into constants, and
translate each ATen node with the handlers of torch_ops.py.

Parameters and float buffers keep their state_dict names; integer buffers and lifted constants
(index tables, masks computed in forward) are constants: subgraphs of constants are computed here
with PyTorch itself and enter the spec as weights of their own.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import operator
import os

from ait_build.errors import AitError
from ait_build.importers.boundaries import export_error, guards_hold, prepare
from ait_build.importers.factory import load_factory, said, user_code
from ait_build.importers.graph import ImportFailure, ImportGraph, Value
from ait_build.importers.lower import Lower
from ait_build.importers.options import example_of
from ait_build.importers.torch_args import empty
from ait_build.importers.torch_ops import CASTS, HANDLERS
from ait_build.ir.dims import Dim

TORCH_DTYPES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16",
                "int64": "int64", "int32": "int32", "bool": "bool", "float64": "float32"}
# ops whose result depends only on their arguments' dtypes and the given sizes
SHAPE_ONLY = ("aten.new_zeros", "aten.new_ones", "aten.new_full", "aten.new_empty",
              "aten.zeros_like", "aten.ones_like", "aten.full_like", "aten.empty_like")
NEVER_FOLD = ("aten._assert_tensor_metadata", "aten.sym_size", "aten.rand", "aten.randn",
              "aten.bernoulli", "aten.dropout", "aten.native_dropout")
# ops that only view, copy, cast or look up what they read: of a parameter (and index tables)
# they stay run-time ops, so the parameter stays a weight under its state_dict name (a linear's
# transposed weight; Swin's relative position bias table, gathered by its index: the build
# folds the lookup, and a module compared with the spec, or new weights, give the same bias)
VIEWS = ("aten.t.", "aten.transpose.", "aten.permute.", "aten.view.", "aten.reshape.",
         "aten._unsafe_view.", "aten.unsqueeze.", "aten.squeeze.", "aten.expand.",
         "aten.slice.Tensor", "aten.select.", "aten.clone.", "aten.contiguous.", "aten.alias.",
         "aten.detach.", "aten._to_copy.", "aten.to.", "aten.type_as.", "aten.flatten.",
         "aten.unflatten.", "aten.view_as.", "aten.reshape_as.", "aten.expand_as.",
         "aten.lift_fresh_copy.", "aten.embedding.", "aten.index_select.", "aten.split",
         "aten.chunk.", "aten.unbind.", "aten.numpy_T.", "aten.index.Tensor")


def _one_integer_index(node) -> bool:
    """False for an aten.index.Tensor that the run-time gather cannot take (several index
    tensors, a bool mask): of known tensors it is computed here. True for every other op."""
    if not _target_name(node).startswith("aten.index.Tensor"):
        return True
    given = [a for a in node.args[1] if a is not None]
    val = getattr(given[0], "meta", {}).get("val") if len(given) == 1 else None
    return str(getattr(val, "dtype", "")) in ("torch.int64", "torch.int32")


def export(model, inputs: list, dims: dict):
    """torch.export with each named size of each input as a torch.export.Dim."""
    import torch
    tdims = {name: torch.export.Dim(name, min=d.min, max=d.max) for name, d in dims.items()}
    examples, dynamic = [], []
    for spec in inputs:
        shape = [s if isinstance(s, int) else example_of(s, dims) for s in spec.shape]
        dtype = getattr(torch, spec.dtype)
        try:
            examples.append(torch.randn(shape, dtype=dtype) if dtype.is_floating_point
                            else torch.zeros(shape, dtype=dtype))
        except (RuntimeError, MemoryError) as exc:  # sizes past this machine's memory
            raise AitError(f"--input {spec.name}: an example of shape {shape} cannot be made "
                           f"to export with: {said(exc)}") from None
        dynamic.append({i: _torch_dim(s, tdims) for i, s in enumerate(spec.shape)
                        if not isinstance(s, int)} or None)
    params = list(inspect.signature(model.forward).parameters)
    by_name = all(spec.name in params for spec in inputs)

    printed = io.StringIO()  # the graph torch.export gave up on, read for the model's line

    def run(dynamic):
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            if by_name:
                return torch.export.export(
                    model, (), {s.name: t for s, t in zip(inputs, examples)},
                    dynamic_shapes={s.name: d for s, d in zip(inputs, dynamic)})
            return torch.export.export(model, tuple(examples), dynamic_shapes=tuple(dynamic))
    try:  # the exporter prints the graph it gave up on: the error below says it in a line
        try:
            ep = run(dynamic)
        except Exception as exc:  # guards true over the ranges that torch cannot prove
            derived = any(isinstance(s, Dim) for spec in inputs for s in spec.shape)
            proven = guards_hold(str(exc), dims)
            if derived or not proven:
                raise
            # those dims as hints, the others as they were (a hint on XLNet's batch too made
            # torch.export take it as static)
            hints = {name: torch.export.Dim.DYNAMIC(min=d.min, max=d.max) if name in proven
                     else tdims[name] for name, d in dims.items()}
            ep = run([{i: hints[s] for i, s in enumerate(spec.shape) if isinstance(s, str)}
                      or None for spec in inputs])
    except Exception as exc:  # torch.export raises many kinds
        raise export_error(exc, printed.getvalue()) from None
    return ep.run_decompositions({})  # functional ATen: no in-place ops, same high-level ops


def _whole_quotient(expr):
    """(p, q) for ceil/floor/trunc(float(p) / q), q a whole number: the size is p / q where q
    divides p's coefficients (a float division torch.export keeps as written); else None."""
    if type(expr).__name__ not in ("CeilToInt", "FloorToInt", "TruncToInt") or \
            type(expr.args[0]).__name__ != "FloatTrueDiv":
        return None
    num, den = expr.args[0].args
    if type(num).__name__ == "ToFloat":
        num = num.args[0]
    if not den.is_number or float(den) != int(float(den)) or int(float(den)) == 0:
        return None
    return num, int(float(den))


def _torch_dim(size, tdims: dict):
    """A dim name's torch.export.Dim, or a*DIM + b's derived dim (options checked the form)."""
    if isinstance(size, str):
        return tdims[size]
    (name,) = size.symbols
    b = size.eval({name: 0})
    return tdims[name] * (size.eval({name: 1}) - b) + b


def _torch_dtype(node):
    """The torch dtype of an FX node's value, or None (a number, a list)."""
    return getattr(node.meta.get("val"), "dtype", None) if hasattr(node, "meta") else None


def _is_float(node) -> bool:
    return bool(getattr(_torch_dtype(node), "is_floating_point", False))


class TorchTranslator:
    def __init__(self, ep, inputs: list, dims: dict, graph: ImportGraph, leaves=frozenset()):
        import torch
        self.torch = torch
        self.leaves = leaves  # paths of modules without children or parameters (nn.ReLU)
        self.ep = ep
        self.g = graph
        self.lower = Lower(graph)
        self.inputs = inputs
        self.dims = dims
        self.symbols: dict = {}  # sympy symbol name -> our dim name
        self.values: dict = {}  # fx node -> Value | [Value] | python value
        self.consts: dict = {}  # fx node -> torch value known at import time
        self.weight_of: dict = {}  # fx placeholder -> weight name (parameters, float buffers)
        self.param_tensors: dict = {}  # fx placeholder -> its tensor, to fold computations on it
        self.folded_weights: dict = {}  # fx node -> weight name of a constant a GEMM reads
        self.param_values: dict = {}  # weight name -> Value of its parameter node
        self.iota: dict = {}  # fx node -> (size, position): an arange seen through unsqueezes
        # fx node -> its bool mask node: x[mask] kept whole, where only elementwise ops lead it
        # to x'[mask] = ... (torch_scatter.masked_rows)
        self.masked: dict = {}
        self.island: set = set()  # fx nodes kept float32 under a 16-bit --dtype (_float32_island)

    # -- set-up ---------------------------------------------------------------------------------
    def run(self) -> ImportGraph:
        self._placeholders()
        failed: set = set()
        for node in self.ep.graph.nodes:
            if node.op != "call_function":
                continue
            self._context(node)
            if node in self.consts:
                continue
            self._float32_island(node)
            if self._fold(node):
                continue
            if _is_symbolic_scalar(node) or empty(node):  # an empty tensor: only a cat reads it
                continue
            key = _target_name(node)
            handler = HANDLERS.get(key)
            if handler is None:  # reported even after a failed input: every op is listed
                failed.add(node)
                self.g.unsupported(self.lower.where, f"{key} has no translation")
                self.values[node] = None
                continue
            if any(a in failed for a in _flat(node.args) + _flat(node.kwargs)):
                failed.add(node)  # reads an op already reported
                continue
            try:
                self.values[node] = handler(self, node)
            except AitError as exc:
                self.g.unsupported(self.lower.where, f"{key}: {_strip_where(exc, self.lower.where)}")
                self.values[node] = None
                failed.add(node)
        if self.g.problems:
            raise ImportFailure(f"{len(self.g.problems)} operation(s) cannot be imported:",
                                self.g.problems)
        self._outputs()
        return self.g

    def _placeholders(self) -> None:
        sig = self.ep.graph_signature
        kinds = {spec.arg.name: spec for spec in sig.input_specs}
        state = self.ep.state_dict
        constants = getattr(self.ep, "constants", {})
        user = iter(self.inputs)
        for node in self.ep.graph.nodes:
            if node.op != "placeholder":
                continue
            spec = kinds[node.name]
            kind = spec.kind.name
            if kind == "USER_INPUT":
                self._user_input(node, next(user))
            elif kind == "PARAMETER":
                self._weight(node, spec.target, state[spec.target])
            elif kind == "BUFFER":
                tensor = state[spec.target] if spec.target in state else constants[spec.target]
                if tensor.is_floating_point() and getattr(spec, "persistent", True):
                    self._weight(node, spec.target, tensor)
                else:  # index tables, position ids: constants (kept by name when read as such)
                    self.consts[node] = tensor
                    self.weight_of[node] = spec.target
            else:  # lifted tensor constants
                self.consts[node] = constants[spec.target]

    def _user_input(self, node, spec) -> None:
        val = node.meta["val"]
        shape = []
        for axis, (size, want) in enumerate(zip(val.shape, spec.shape)):
            if isinstance(want, int):
                shape.append(want)
                continue
            expr = getattr(size, "node", None)
            if expr is None or not expr.expr.free_symbols:
                raise AitError(f"input '{spec.name}' dim {axis} ('{want}'): the model fixes it "
                               f"to {int(size)}; give that size instead of a dim")
            if isinstance(want, Dim):  # a derived dim, 320*s0 + 80: s0 is the expression's dim
                (symbol,), (name,) = expr.expr.free_symbols, want.symbols
                self.symbols[symbol.name] = name
                if self._sympy(expr.expr) != want:
                    raise AitError(f"input '{spec.name}' dim {axis} ('{want}'): torch.export "
                                   f"made it {expr.expr}")
            elif not expr.expr.is_Symbol:
                raise AitError(f"input '{spec.name}' dim {axis} ('{want}'): torch.export made "
                               f"it {expr.expr}, not a dim of its own")
            else:
                self.symbols[expr.expr.name] = want
            shape.append(want)
        for name, d in self.dims.items():
            self.g.dims[name] = (d.min, d.max, d.opt)
        dtype = TORCH_DTYPES[spec.dtype]  # a float32 source input takes the spec's dtype, as weights do
        self.values[node] = self.g.add_input(spec.name, tuple(shape),
                                             self.g.dtype if dtype == "float32" else dtype)

    def _weight(self, node, name: str, tensor) -> None:
        self.g.weights[name] = _numpy(tensor, self.torch)
        self.g.taken.add(name)
        self.weight_of[node] = name
        self.param_tensors[node] = tensor.detach()

    def _context(self, node) -> None:
        stack = node.meta.get("nn_module_stack") or {}
        for entry_path, cls in stack.values():
            self.g.classes.setdefault(entry_path, getattr(cls, "__name__", str(cls)))
        path = ""
        if stack:
            path = list(stack.values())[-1][0]
            if path.startswith("_") or " " in path:
                path = ""
            path = path.replace("L['self'].", "").replace("L__self___", "")
        self.lower.path = path
        self.lower.where = source_location(node, path)
        self.lower.hint = _target_name(node).split(".")[1] if "." in _target_name(node) else ""
        self.lower.leaf = path in self.leaves

    # -- constants ------------------------------------------------------------------------------
    def _fold(self, node) -> bool:
        """Computes `node` now when everything it reads is known and its result has static
        sizes; True when it did. Parameters count as known to ops that compute (weight norm,
        a bias table resized, a bias with a slice zeroed), not to views and casts of them."""
        key = _target_name(node)
        if any(key.startswith(p) for p in NEVER_FOLD) or not _static_tensor(node):
            return False
        shape_only = any(key.startswith(p) for p in SHAPE_ONLY)
        computes = not any(key.startswith(p) for p in VIEWS) or not _one_integer_index(node)
        args = [a for a in _flat(node.args) + _flat(node.kwargs) if hasattr(a, "op")]
        for a in args:
            if a in self.consts or a in self.param_tensors:
                continue
            if shape_only and a is node.args[0]:  # read for its dtype (the result is static)
                continue
            return False
        # a view of a parameter is translated as usual (below), and its value kept for the
        # computations that may read it later (Swin V2's bias.clone() whose slice is zeroed)
        view_of_param = not computes and any(a in self.param_tensors for a in args)
        try:
            def real(a):
                if hasattr(a, "op"):
                    if a in self.consts:
                        return self.consts[a]
                    if a in self.param_tensors:
                        return self.param_tensors[a]
                    val = a.meta["val"]  # a shape-only op's operand: its dtype matters
                    shape = tuple(int(s) if _is_int(s) or isinstance(s, int) else 1
                                  for s in val.shape)
                    return self.torch.zeros(shape, dtype=val.dtype)
                return a
            call_args = _map(node.args, real)
            kwargs = _map(node.kwargs, real)
            result = node.target(*call_args, **kwargs)
        except Exception:
            return False
        if view_of_param:
            self.param_tensors[node] = result
            return False
        self.consts[node] = result
        return True

    def constant_value(self, node) -> Value:
        """A known tensor read by a run-time op: a parameter node (by its buffer's name when it
        is one, else named after the node), made once."""
        if node in self.values and isinstance(self.values[node], Value):
            return self.values[node]
        array = _numpy(self.consts[node], self.torch)
        if node in self.weight_of:
            name = self.g.add_weight(self.weight_of[node], array)
            value = self.g.parameter(name, self.lower.path, self.lower.where)
        else:
            # named by the module reading it and the op that made it, not the FX node ('view_12'),
            # so each instance of a repeated module names its own alike (blocks fold them)
            value = self.g.constant(array, self.lower.path, _op_hint(node), self.lower.where)
        self.values[node] = value
        return value

    def uniform(self, arg):
        """The single value of a known tensor whose elements are all equal, else None."""
        if not hasattr(arg, "op") or arg not in self.consts:
            return None
        t = self.consts[arg]
        if not isinstance(t, self.torch.Tensor) or t.numel() == 0:
            return None
        first = t.reshape(-1)[0]
        return first.item() if bool((t == first).all()) else None

    # -- arguments ------------------------------------------------------------------------------
    def tensor(self, arg) -> Value:
        """The Value of a tensor argument (a known one becomes a parameter node)."""
        if hasattr(arg, "op"):
            if arg in self.weight_of and arg not in self.consts:
                return self.parameter(self.weight_of[arg])
            if arg in self.consts:
                return self.constant_value(arg)
            value = self.values.get(arg)
            if isinstance(value, Value):
                return value
            if empty(arg):
                raise AitError(f"'{arg.name}' has no elements (a size of 0): only a concat, "
                               "which leaves it out, may read such a tensor")
            source = arg.args[0] if _target_name(arg) == "getitem" and arg.args else None
            if isinstance(self.values.get(source), list):  # an output its handler does not make
                raise AitError(f"output {arg.args[1]} of {_target_name(source)} is not "
                               "translated (of max/min over a dim and max pooling, only the "
                               "values are, not the indices)")
            raise AitError(f"'{arg.name}' is not a tensor we could translate")
        raise AitError(f"expected a tensor, got {arg!r}")

    def parameter(self, name: str) -> Value:
        if name not in self.param_values:
            self.param_values[name] = self.g.parameter(name, self.lower.path, self.lower.where)
        return self.param_values[name]

    def number(self, arg):
        """A Python number for a scalar argument or a known one-element tensor; else None."""
        if isinstance(arg, (bool, int, float)):
            return arg
        if hasattr(arg, "op") and arg in self.consts:
            t = self.consts[arg]
            if isinstance(t, (bool, int, float)):
                return t
            if t.numel() == 1:
                return t.item()
        return None

    def operand(self, arg):
        """A number when the argument is one, else a Value."""
        n = self.number(arg)
        return n if n is not None else self.tensor(arg)

    def weight_name(self, arg, role: str | None = None) -> str | None:
        """The state_dict name of a parameter argument; with `role`, a float tensor computed at
        import time (a weight-normed conv's weight) too, stored as '<module>.<role>' (None for
        other tensors)."""
        if not hasattr(arg, "op"):
            return None
        if arg not in self.consts:
            return self.weight_of.get(arg)
        tensor = self.consts[arg]
        if role is None or not getattr(tensor, "is_floating_point", lambda: False)():
            return None
        if arg not in self.folded_weights:
            base = f"{self.lower.path}.{role}" if self.lower.path else role
            self.folded_weights[arg] = self.g.add_weight(base, _numpy(tensor, self.torch))
        return self.folded_weights[arg]

    def shape(self, node) -> tuple:
        return tuple(self.dim(s) for s in node.meta["val"].shape)

    def dim(self, size) -> Dim:
        """A size: an int, a SymInt, or an FX node computing one."""
        if isinstance(size, int):
            return Dim.of(size)
        if hasattr(size, "meta"):
            return self.dim(size.meta["val"])
        return self._sympy(size.node.expr)

    def _sympy(self, expr) -> Dim:
        if expr.is_Integer:
            return Dim.of(int(expr))
        if expr.is_Symbol:
            if expr.name not in self.symbols:
                raise AitError(f"size '{expr}' is not one of the input dims")
            return Dim.of(self.symbols[expr.name])
        if expr.is_Add:
            out = Dim.of(0)
            for term in expr.args:
                out = out + self._sympy(term)
            return out
        if expr.is_Mul:
            out = Dim.of(1)
            for term in expr.args:
                out = out * self._sympy(term)
            return out
        if expr.is_Pow and expr.exp.is_Integer and int(expr.exp) > 0:
            base = self._sympy(expr.base)
            out = Dim.of(1)
            for _ in range(int(expr.exp)):
                out = out * base
            return out
        whole = _whole_quotient(expr)  # ceil(float(2*s) / -1.0) (XLNet's arange length)
        if whole is not None:
            size, divisor = self._sympy(whole[0]), whole[1]
            if all(c % divisor == 0 for _, c in size.terms):
                return Dim({m: c // divisor for m, c in size.terms})
        raise AitError(f"size '{expr}' is not a polynomial of the input dims")

    def dtype(self, node) -> str:
        name = str(node.meta["val"].dtype).replace("torch.", "")
        if name not in TORCH_DTYPES:
            raise AitError(f"tensors of dtype {name} are not supported")
        our = TORCH_DTYPES[name]
        if our == "float32":
            return "float32" if node in self.island else self.g.dtype
        return our

    def _float32_island(self, node) -> None:
        """Under a 16-bit --dtype, what the module computes in float32 whatever its dtype stays
        float32: rotary embeddings cast integer positions to float32 and multiply them by
        `inv_freq.float()` (an angle of 127 in float16 is off by up to 0.03). An island starts at
        a cast of a non-float tensor to float32 and grows through ops that read only it,
        parameters and constants; an op where it meets an activation computes in the model's
        dtype, the island's value cast down there (as `cos.to(x.dtype)` does in PyTorch)."""
        if self.g.dtype == "float32" or str(_torch_dtype(node)) != "torch.float32":
            return
        args = [a for a in _flat(node.args) + _flat(node.kwargs) if hasattr(a, "op")]
        if _target_name(node) in CASTS and args and not _is_float(args[0]):
            self.island.add(node)
        elif any(a in self.island for a in args) and all(
                a in self.island or a in self.consts or a in self.param_tensors
                or not _is_float(a) for a in args):
            self.island.add(node)

    def weight_node_name(self, weight: str) -> str:
        """The node that owns `weight` is named so its weights need no renaming."""
        return weight[:-len(".weight")] if weight.endswith(".weight") else weight

    # -- outputs --------------------------------------------------------------------------------
    def _outputs(self) -> None:
        out_node = next(n for n in self.ep.graph.nodes if n.op == "output")
        results = _flat(out_node.args[0])
        names = output_names(self.ep, len(results))
        self.lower.path, self.lower.where = "", "the model's outputs"
        for fx_node, name in zip(results, names):
            value = self.tensor(fx_node)
            value = self.lower.plain(value)
            ref = value.ref
            if name is not None or ref in [n for n, _ in self.g.inputs] or ref in self.g.outputs \
                    or ref.endswith(":0") or ":" in ref:
                value = self.lower.emit("identity", [value], name=name or "output",
                                        hint=name or "output")
            self.g.outputs.append(value.ref)


def _numpy(tensor, torch):
    """A tensor as a NumPy array (float64 and bfloat16 as float32)."""
    array = tensor.detach().cpu().contiguous()
    if array.dtype in (torch.float64, torch.bfloat16):
        array = array.float()
    return array.numpy()


def output_names(ep, count: int) -> list:
    """Names of the model's outputs: the keys of a dict-like result (transformers' ModelOutput),
    else None (the node's own name)."""
    try:
        import torch.utils._pytree as pytree
        tree = pytree.tree_unflatten(list(range(count)), ep.call_spec.out_spec)
    except Exception:
        return [None] * count
    if isinstance(tree, dict):
        names = [None] * count
        for key, index in tree.items():
            if isinstance(index, int):
                names[index] = str(key)
        return names
    if count == 1:
        return [None]
    return [f"output_{i}" for i in range(count)]


def source_location(node, path: str) -> str:
    """'file.py:LINE (aten.op, module PATH)': the innermost frame of the model's own code, not
    of PyTorch's (nn.Conv2d's forward is conv.py in torch; the model's line called it)."""
    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
    frame = ""
    for line in reversed(trace):
        line = line.strip()
        parts = line.split('"')
        if line.startswith("File ") and len(parts) >= 3 and not _in_torch(parts[1]):
            number = line.split("line ")[-1].split(",")[0]
            frame = f"{os.path.basename(parts[1])}:{number}"
            break
    module = f", module '{path}'" if path else ""
    return f"{frame or node.name} ({_target_name(node)}{module})"


def _in_torch(file: str) -> bool:
    import torch
    return os.path.abspath(file).startswith(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)


def _op_hint(node) -> str:
    """'view' for aten.view.default, the node's name for a placeholder."""
    name = _target_name(node)
    return name.split(".")[1] if name.startswith("aten.") else node.name


def _target_name(node) -> str:
    target = node.target
    if target is operator.getitem:
        return "getitem"
    return str(target)


def _is_symbolic_scalar(node) -> bool:
    """Size arithmetic (sym_size, operator.mul on sizes): we read sizes from the shapes."""
    val = node.meta.get("val")
    return val is not None and not hasattr(val, "shape") and not isinstance(val, (list, tuple))


def _static_tensor(node) -> bool:
    val = node.meta.get("val")
    if val is None:
        return False
    vals = val if isinstance(val, (list, tuple)) else [val]
    for v in vals:
        if not hasattr(v, "shape"):
            return False
        if not all(isinstance(s, int) or _is_int(s) for s in v.shape):
            return False
    return True


def _is_int(size) -> bool:
    try:
        return size.node.expr.is_Integer
    except AttributeError:
        return False


def _flat(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flat(v)]
    return [value]


def _map(value, fn):
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return fn(value)


def _strip_where(exc: Exception, where: str) -> str:
    text = str(exc)
    return text[len(where) + 2:] if text.startswith(where + ": ") else text


def import_torch(target: str, args_json: str | None, inputs: list, dims: dict, name: str,
                 dtype: str = "float32", say=None) -> ImportGraph:
    """`say` takes the import's progress lines and notes (default: none)."""
    say = say or (lambda text: None)
    say(f"loading {target}")
    model = prepare(load_factory(target, args_json), say)
    say("exporting with torch.export")
    with user_code(target):  # the export runs the model's forward
        ep = export(model, inputs, dims)
    leaves = frozenset(path for path, m in model.named_modules()
                       if path and not any(True for _ in m.children())
                       and not any(True for _ in m.parameters(recurse=False)))
    count = sum(1 for n in ep.graph.nodes if n.op == "call_function")
    say(f"translating {count} ATen operations")
    return TorchTranslator(ep, inputs, dims, ImportGraph(name, dtype), leaves).run()

