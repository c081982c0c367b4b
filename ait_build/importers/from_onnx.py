"""ONNX -> ImportGraph: initializers become weights under their own names, each node is translated
by a handler of onnx_ops.py through Lower (lower.py), the same layer the PyTorch frontend writes
through.

What the model computes without its inputs is computed here: a node whose inputs are all known
(initializers, Constant nodes, results of such nodes) runs through ONNX's reference evaluator and
its result is a constant. Sizes are known too: `Shape` gives a list of our Dims (`batch`,
`seq`), and the arithmetic exporters do on them (Gather, Concat, Unsqueeze, Mul...) stays a
list of Dims, so a Reshape or Expand that reads it gets sizes the spec can write.
"""

from __future__ import annotations

import ast
import re

import numpy as np

from ait_build.errors import AitError, SpecError
from ait_build.files.read import check_regular
from ait_build.importers.graph import ImportFailure, ImportGraph, Value, capped
from ait_build.importers.lower import Lower
from ait_build.importers.onnx_check import check_model
from ait_build.importers.onnx_ops import HANDLERS
from ait_build.importers.onnx_values import ONNX_DTYPES, Sizes, as_array, attributes, is_known
from ait_build.importers.options import DEFAULT_MAX
from ait_build.ir.dims import DimRange
from ait_build.spec.model import MAX_WEIGHT_ELEMENTS
from ait_build.spec.names import TENSOR_NAME

SIZE_INPUT_ELEMENTS = 64  # inputs up to this size reach shape inference with their values


class OnnxTranslator:
    def __init__(self, model, inputs: list, dims: list, graph: ImportGraph):
        self.model = model
        self.g = graph
        self.lower = Lower(graph)
        self.given_inputs = {spec.name: spec for spec in inputs}
        self.given_dims = {d.name: d for d in dims}
        self.values: dict = {}  # onnx name -> Value | np.ndarray | Sizes
        self.params: dict = {}  # weight name -> Value of its parameter node
        self.iota: dict = {}  # onnx name -> (size, position): a Range through unsqueezes
        self.grids: dict = {}  # onnx name -> [(size, position)]: aranges stacked (GatherND)
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                          13)

    def run(self) -> ImportGraph:
        from onnx import numpy_helper
        graph = self.model.graph
        for init in graph.initializer:
            array = numpy_helper.to_array(init)
            if array.dtype == np.float64:
                array = array.astype(np.float32)
            self.values[init.name] = array
        self._inputs(graph)
        failed: set = set()
        for index, node in enumerate(graph.node):
            self.lower.path = _path(node)
            self.lower.where = f"node {index} '{node.name or node.output[0]}' ({node.op_type})"
            self.lower.hint = node.op_type.lower()
            self.lower.leaf = False
            failed.update(node.output)  # until it is translated
            if node.domain not in ("", "ai.onnx"):
                self.g.unsupported(self.lower.where, f"operator domain '{node.domain}'")
                continue
            handler = HANDLERS.get(node.op_type)
            missing = handler is None and node.op_type != "Constant"
            if any(name in failed for name in node.input):
                if missing:  # listed even after a failure: every operator is in the report
                    self.g.unsupported(self.lower.where, f"{node.op_type} has no translation")
                continue  # else it reads an op already reported
            try:
                if self._fold(node):  # any operator ONNX's reference evaluator computes
                    failed.difference_update(node.output)
                    continue
                if missing:
                    self.g.unsupported(self.lower.where, f"{node.op_type} has no translation")
                    continue
                results = handler(self, node)
            except (AitError, ValueError, TypeError, AttributeError, IndexError) as exc:
                # a form of the operator the handler does not expect: one line of the report
                text = str(exc) if isinstance(exc, AitError) else f"{type(exc).__name__}: {exc}"
                prefix = self.lower.where + ": "
                self.g.unsupported(self.lower.where, text[len(prefix):] if text.startswith(prefix)
                                   else text)
                continue
            failed.difference_update(node.output)
            results = results if isinstance(results, list) and not isinstance(results, Sizes) \
                else [results]
            for name, value in zip(node.output, results):
                if name:
                    self.values[name] = value
        if self.g.problems:
            raise ImportFailure(f"{len(self.g.problems)} operation(s) cannot be imported:",
                                self.g.problems)
        self._outputs(graph)
        return self.g

    # -- inputs and outputs -----------------------------------------------------------------------
    def _inputs(self, graph) -> None:
        for inp in graph.input:
            if inp.name in self.values:  # an initializer listed as an input (old exporters)
                continue
            ttype = inp.type.tensor_type
            dtype = ONNX_DTYPES.get(ttype.elem_type)
            if dtype is None:
                raise AitError(f"input '{inp.name}': element type {ttype.elem_type} is not "
                               "supported")
            # tf2onnx's `input_1:0` or a name longer than a spec's: named as weights are
            name = inp.name if TENSOR_NAME.fullmatch(inp.name) else \
                self.g.fresh(onnx_tensor_name(inp.name))
            given = self.given_inputs.get(inp.name) or self.given_inputs.get(name)
            if given is not None:
                shape = list(given.shape)
                if not all(isinstance(d, (int, str)) for d in shape):
                    raise AitError(f"--input {inp.name}: a size expression (320*frames + 80) "
                                   "is taken by `import torch` only")
                if len(shape) != len(ttype.shape.dim):
                    raise AitError(f"--input {inp.name}: the model's input has rank "
                                   f"{len(ttype.shape.dim)}, not {len(shape)}")
            else:
                shape = []
                for axis, d in enumerate(ttype.shape.dim):
                    if d.HasField("dim_value") and d.dim_value > 0:
                        shape.append(int(d.dim_value))
                    elif d.dim_param and d.dim_param.isidentifier():
                        shape.append(d.dim_param)
                    else:
                        raise AitError(f"input '{inp.name}' dim {axis} has no size or name: give "
                                       f"--input {inp.name}:SHAPE")
            for s in shape:
                if isinstance(s, str) and s not in self.g.dims:
                    d = self.given_dims.get(s) or DimRange(s, 1, DEFAULT_MAX, 8)
                    self.g.dims[s] = (d.min, d.max, d.opt)
            src_dtype = "float32" if dtype in ("float16", "bfloat16") else dtype
            if given is not None:
                src_dtype = given.dtype
            self.values[inp.name] = self.g.add_input(
                name, tuple(shape), self.g.dtype if src_dtype == "float32" else src_dtype)
        unknown = sorted(set(self.given_dims) - set(self.g.dims))
        if unknown:
            raise AitError(f"--dim {unknown[0]}: no input of the model uses a dim of that name")

    def _outputs(self, graph) -> None:
        self.lower.path, self.lower.where = "", "the model's outputs"
        inputs = {name for name, _ in self.g.inputs}
        for out in graph.output:
            value = self.values.get(out.name)
            if is_known(value):
                value = self.constant(out.name, value)
            value = self.lower.plain(value)
            if value.ref in inputs or value.ref in self.g.outputs or ":" in value.ref:
                name = onnx_tensor_name(out.name)
                value = self.lower.emit("identity", [value], name=name, hint=name)
            self.g.outputs.append(value.ref)

    # -- constants --------------------------------------------------------------------------------
    def _fold(self, node) -> bool:
        """Computes a node whose inputs are all known; True when it did."""
        if node.op_type in ("Shape", "Size"):
            return False  # onnx_ops reads shapes as Dims
        ins = [self.values.get(name) if name else None for name in node.input]
        if node.op_type != "Constant" and (not ins or not all(
                v is None and not name or is_known(v) for v, name in zip(ins, node.input))):
            return False
        if any(isinstance(v, Sizes) for v in ins):
            if any(as_array(v) is None for v in ins if v is not None):
                return False  # symbolic sizes: the handler computes with Dims
        arrays = [as_array(v) if v is not None else None for v in ins]
        results = evaluate(node, arrays, self.opset)
        for name, array in zip(node.output, results):
            if name:
                array = np.asarray(array)
                self.values[name] = array.astype(np.float32) if array.dtype == np.float64 \
                    else array
        return True

    def constant(self, name: str, value) -> Value:
        """A known tensor read by a run-time op: a parameter node named after it."""
        array = as_array(value)
        if array is None:
            raise AitError(f"'{name}' holds sizes that depend on the inputs "
                           f"({', '.join(str(d) for d in value)}) and is read as a tensor")
        key = onnx_tensor_name(name)
        if key in self.params:
            return self.params[key]
        wname = self.g.add_weight(key, np.ascontiguousarray(array))
        value = self.g.parameter(wname, self.lower.path, self.lower.where)
        self.params[key] = value
        return value

    # -- arguments --------------------------------------------------------------------------------
    def get(self, node, index: int):
        """The input at `index`: a Value, a known array/Sizes, or None when absent."""
        if index >= len(node.input) or not node.input[index]:
            return None
        name = node.input[index]
        if name not in self.values:
            raise AitError(f"input '{name}' was not translated")
        return self.values[name]

    def tensor(self, node, index: int) -> Value:
        value = self.get(node, index)
        if value is None:
            raise AitError(f"input {index} is required")
        if is_known(value):
            return self.constant(node.input[index], value)
        return value

    def operand(self, node, index: int):
        """A number for a known one-element input, else a Value."""
        value = self.get(node, index)
        if is_known(value):
            array = as_array(value)
            if array is not None and array.size == 1:
                return array.reshape(-1)[0].item()
        return self.tensor(node, index)

    def weight(self, node, index: int) -> str | None:
        """The weight name of an initializer input (None when computed in the model)."""
        value = self.get(node, index)
        if not isinstance(value, np.ndarray):
            return None
        name = onnx_tensor_name(node.input[index])
        if name in self.g.weights and self.g.weights[name] is value:
            return name
        return self.g.add_weight(name, value)

    def ints(self, node, index: int) -> list | None:
        value = self.get(node, index)
        if value is None:
            return None
        array = as_array(value) if is_known(value) else None
        if array is None:
            raise AitError(f"input {index} must be known at import time")
        return [int(v) for v in array.reshape(-1)]


def _fold_gather_elements(node, arrays: list) -> list:
    data, indices = arrays
    axis = attributes(node).get("axis", 0) % data.ndim
    size = data.shape[axis]
    return [np.take_along_axis(data, np.where(indices < 0, indices + size, indices), axis)]


# operators folded with NumPy: onnx.reference's GatherElements fails (onnx 1.23.2)
NUMPY_FOLDS = {"GatherElements": _fold_gather_elements}


def evaluate(node, arrays: list, opset: int) -> list:
    """One node through onnx.reference (the ONNX package's own semantics), or NumPy for the
    operators of NUMPY_FOLDS, after ONNX's shape inference says its results fit a weight: a
    ConstantOfShape, Expand, Tile or Range asking for 2^40 elements would otherwise be allocated
    (and filled) here."""
    from onnx.reference import ReferenceEvaluator
    names = [f"in{i}" if a is not None else "" for i, a in enumerate(arrays)]
    feeds = {n: a for n, a in zip(names, arrays) if n}
    too_big = _oversized_result(node, names, feeds, opset)
    if too_big:
        raise AitError(f"folding a constant {node.op_type}: {too_big}")
    if node.op_type in NUMPY_FOLDS:
        return NUMPY_FOLDS[node.op_type](node, arrays)
    try:
        return ReferenceEvaluator(_one_node(node, names, feeds, opset)).run(None, feeds)
    except Exception as exc:
        raise AitError(f"folding a constant {node.op_type}: {exc}") from None


def _one_node(node, names: list, feeds: dict, opset: int, values: tuple = ()):
    """A model of `node` alone, reading `feeds` as inputs (those named in `values` as
    initializers, so shape inference sees their values)."""
    from onnx import helper, numpy_helper
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
              for n, a in feeds.items() if n not in values]
    initializers = [numpy_helper.from_array(np.asarray(feeds[n]), n) for n in values]
    outs = [f"out{i}" for i in range(len(node.output))]
    one = helper.make_node(node.op_type, names, outs, domain=node.domain)
    one.attribute.extend(node.attribute)
    graph = helper.make_graph([one], "fold", inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outs], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _oversized_result(node, names: list, feeds: dict, opset: int) -> str:
    """Why a result of the node would be larger than a weight may be, or ''. The values of small
    inputs (shapes, repeats, limits) are what sizes come from; shape inference reads them."""
    import onnx
    small = tuple(n for n, a in feeds.items() if np.asarray(a).size <= SIZE_INPUT_ELEMENTS)
    try:
        model = onnx.shape_inference.infer_shapes(_one_node(node, names, feeds, opset, small),
                                                  data_prop=True)
    except Exception:
        return ""  # shape inference does not know this form: the evaluator says what is wrong
    for out in model.graph.output:
        dims = out.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            elements = 1
            for d in dims:
                elements *= d.dim_value
            if elements > MAX_WEIGHT_ELEMENTS:
                return (f"its result would hold {elements} elements "
                        f"({[d.dim_value for d in dims]}); a weight may hold 2^32")
    return ""


def onnx_tensor_name(name: str) -> str:
    """An ONNX name as a tensor/weight name: '/layer1/conv/Conv_output_0' -> 'layer1.conv.Conv'."""
    text = name.strip("/").replace("/", ".").replace("::", ".")
    text = re.sub(r"_output_0$", "", text)
    text = re.sub(r"[^A-Za-z0-9_.\-]", "_", text).strip(".")
    return capped(text or "value")


def _path(node) -> str:
    """The module path a node came from: PyTorch exporters name nodes '/layer1/layer1.0/conv1/Conv'
    (TorchScript) or record it in the node's metadata (dynamo: pkg.torch.onnx.name_scopes)."""
    for prop in node.metadata_props:
        if prop.key == "pkg.torch.onnx.name_scopes":
            try:
                scopes = ast.literal_eval(prop.value)
            except (ValueError, SyntaxError):
                break
            return scopes[-2] if len(scopes) >= 2 else ""  # full paths, the op's name last
    parts = [p for p in node.name.split("/") if p][:-1]
    return parts[-1] if parts else ""


def import_onnx(path: str, inputs: list, dims: list, name: str,
                dtype: str = "float32", say=None) -> ImportGraph:
    """`say` takes the import's progress lines (default: none)."""
    import onnx
    say = say or (lambda text: None)
    try:
        check_regular(path)
    except FileNotFoundError:
        raise AitError(f"no such ONNX file: {path}") from None
    except OSError as exc:
        raise AitError(f"{path}: {exc.strerror}") from None
    say(f"reading {path}")
    try:
        model = onnx.load(path)
    except Exception as exc:
        raise AitError(f"cannot read {path} as ONNX: {exc}") from None
    check_model(model, path)
    say(f"translating {len(model.graph.node)} ONNX nodes")
    try:
        return OnnxTranslator(model, inputs, dims, ImportGraph(name, dtype)).run()
    except ImportFailure as exc:
        raise ImportFailure(f"{path}: {exc}") from None
    except SpecError:
        raise  # located in a file of its own
    except AitError as exc:  # the file is what the message is about
        raise AitError(f"{path}: {exc}") from None
