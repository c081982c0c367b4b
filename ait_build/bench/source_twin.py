"""What `bench --vs torch,onnxruntime` compares a spec with: the model its `source:` field names
(ait_build/spec/source.py, written by `ait-build import`), rebuilt here and loaded with the
spec's weights; else the hand-written twin of a zoo spec (models.py). When neither exists, or
the spec was edited after import, or the source cannot be rebuilt on this machine, NoComparison
says why in one line and bench times our side alone.

A PyTorch source is the factory's module called as the import exported it (inputs by name when
forward takes every input's name, else in order), its outputs flattened as torch.export
flattens them. An ONNX source is an ONNX Runtime session on the file, its initializers replaced
by the spec's weights of the same names. Inputs and outputs keep the source's layout unless the
source's `layouts` say otherwise (ours = source.permute(perm)).
"""

from __future__ import annotations

import inspect
import os

import numpy as np

from ait_build.errors import AitError


class NoComparison(AitError):
    """Why a spec cannot be compared with a source model (one line)."""


def read_source(spec: str):
    """(ModelSource or None, the spec's YAML document)."""
    from ait_build.spec.source import parse_source
    from ait_build.spec.yamlfile import load_yaml
    doc = load_yaml(spec)
    return parse_source(doc), doc


def checked_source(spec: str, shown: str):
    """The spec's source, unless the spec was edited after import (NoComparison); None without
    a `source:` field."""
    from ait_build.spec.source import graph_digest
    source, doc = read_source(spec)
    if source is not None and graph_digest(doc) != source.graph_sha256:
        raise NoComparison(f"no comparison: {shown} was edited after import (its graph differs "
                           f"from what `ait-build import` wrote); import it again to compare")
    return source


def weights_note(spec: str, source, graph) -> str:
    """A note when the spec's weights file is not the one the import wrote (a new checkpoint
    is fine: the source model gets the spec's weights)."""
    from ait_build.spec.source import file_digest
    path = getattr(graph.weights, "path", None)
    if not source.weights_sha256 or not path or file_digest(path) == source.weights_sha256:
        return ""
    return "the weights file is not the one the import wrote: the source model gets the spec's weights"


# -- PyTorch --------------------------------------------------------------------------------------
def comparison_twin(spec: str, graph, name: str):
    """The Twin to compare `spec` with: from its source, else the zoo twin named `name`."""
    from ait_build.bench.models import TWINS, Twin, load_spec_weights, torch_twin
    shown = f"spec '{name}'"
    source = checked_source(spec, shown)
    if source is None:
        if name in TWINS:
            return torch_twin(graph, name)
        raise NoComparison(f"no comparison: {shown} has no `source:` (it was not written by "
                           "`ait-build import`) and no PyTorch twin in ait_build/bench/models.py")
    if source.importer != "torch":
        raise NoComparison(f"no comparison with PyTorch: {shown} was imported from ONNX "
                           f"({source.file}); --vs onnxruntime compares with that file")
    model = rebuild_module(source, shown)
    module = source_module(model, graph, source.layouts)
    load_spec_weights(module, graph, strict=False)  # the rest: constants the module computes
    twin = Twin(module.eval(), lambda inputs: to_source_args(inputs, graph, source.layouts),
                tuple(graph.outputs), tuple(graph.inputs))
    twin.note = weights_note(spec, source, graph)
    return twin


def rebuild_module(source, shown: str):
    """The factory's module, as the import made it (load_factory seeds the factory's random
    draws the same way), or NoComparison when it cannot be imported."""
    from ait_build.importers.factory import load_factory
    import json
    try:
        return load_factory(source.factory, json.dumps(source.args))
    except AitError as exc:
        raise NoComparison(f"no comparison: cannot rebuild the source of {shown} "
                           f"({source.factory}) here: {exc}") from None


def source_module(model, graph, layouts: dict):
    """`model` wrapped (state_dict names unchanged) to take the spec's inputs in order and
    return its outputs as a tuple in the spec's order and layouts."""
    import torch
    from torch.utils import _pytree as pytree
    from ait_build.bench.models import _wrap
    names = list(graph.inputs)
    params = inspect.signature(model.forward).parameters
    by_name = all(n in params for n in names)  # as importers/from_torch.py's export called it

    def forward(inner, *args):
        out = inner(**dict(zip(names, args))) if by_name else inner(*args)
        leaves = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        if len(leaves) != len(graph.outputs):
            raise NoComparison(f"no comparison: the rebuilt module returns {len(leaves)} tensors, "
                               f"the spec {len(graph.outputs)} outputs")
        return tuple(_to_ours(t, layouts.get(o)) for t, o in zip(leaves, graph.outputs))

    return _wrap(model, forward)


def _to_ours(tensor, perm):
    return tensor if perm is None else tensor.permute(*perm).contiguous()


def to_source_args(inputs: dict, graph, layouts: dict) -> tuple:
    """Our inputs (name -> NumPy, in the spec's layout) as the source's tensors, floats as
    float32."""
    import torch
    out = []
    for name in graph.inputs:
        array = inputs[name]
        tensor = torch.from_numpy(np.ascontiguousarray(
            array.astype(np.float32) if array.dtype.kind == "f" else array))
        perm = layouts.get(name)
        if perm is not None:  # ours = source.permute(perm)
            tensor = tensor.permute(*np.argsort(perm).tolist()).contiguous()
        out.append(tensor)
    return tuple(out)


# -- ONNX Runtime ---------------------------------------------------------------------------------
def onnx_model(spec: str, graph, name: str):
    """(onnx ModelProto with the spec's weights, note) when the spec was imported from ONNX;
    None when it came from PyTorch (ONNX Runtime then runs the exported twin)."""
    from ait_build.spec.source import file_digest
    shown = f"spec '{name}'"
    source = checked_source(spec, shown)
    if source is None or source.importer != "onnx":
        return None
    path = os.path.join(os.path.dirname(os.path.abspath(spec)), source.file)
    if not os.path.isfile(path):
        raise NoComparison(f"no comparison: {shown} was imported from {source.file}, which is "
                           "not there")
    if file_digest(path) != source.file_sha256:
        raise NoComparison(f"no comparison: {source.file} changed since {shown} was imported "
                           "from it; import it again to compare")
    import onnx
    from onnx import numpy_helper
    from ait_build.importers.from_onnx import onnx_tensor_name  # how the import named each weight
    from ait_build.bench.models import _without_unit_axes
    model = onnx.load(path)
    weights = set(graph.weight_names())
    for i, init in enumerate(model.graph.initializer):
        name = init.name if init.name in weights else onnx_tensor_name(init.name)
        if name in weights:
            dtype = numpy_helper.to_array(init).dtype
            value = np.asarray(graph.weights.get(name)).astype(dtype)
            dims = tuple(init.dims)
            if value.shape != dims:  # axes of size 1 the import added or dropped: a scalar
                # stored as [1], a pointwise conv1d's [O, C, 1] as a GEMM's [O, C]
                if _without_unit_axes(value.shape) != _without_unit_axes(dims):
                    raise NoComparison(f"no comparison: weight '{name}' has shape "
                                       f"{list(value.shape)}, {source.file} {list(dims)}")
                value = value.reshape(dims)
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(value, init.name))
    return model, weights_note(spec, source, graph)


def onnx_feed(session, inputs: dict, graph, layouts: dict) -> dict:
    """Our inputs as the session's, in order, in its element types and the source's layout."""
    feed = {}
    for ort_input, name in zip(session.get_inputs(), graph.inputs):
        array = inputs[name]
        perm = layouts.get(name)
        if perm is not None:
            array = np.transpose(array, np.argsort(perm))
        feed[ort_input.name] = np.ascontiguousarray(array.astype(ORT_TYPES.get(ort_input.type,
                                                                               array.dtype)))
    return feed


ORT_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16,
             "tensor(double)": np.float64, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
             "tensor(bool)": np.bool_}


def source_layouts(spec: str) -> dict:
    source, _ = read_source(spec)
    return dict(source.layouts) if source is not None else {}
