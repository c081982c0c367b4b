"""An ONNX file checked before it is translated, with errors that name the file and the node or
tensor: a graph ONNX Runtime and the ONNX checker refuse (a tensor written twice, an input listed
twice, no outputs, no graph at all) is refused here instead of imported with one of the writers
kept, and an initializer whose data does not fill its dims is an error, not a NumPy crash."""

from __future__ import annotations

from ait_build.errors import AitError, shown

# the TensorProto field that holds each element type's values when raw_data is not used, and
# how many of its entries one element takes (complex numbers: two)
TYPED_FIELDS = {"float_data": {1: 1, 14: 2}, "double_data": {11: 1, 15: 2},
                "int64_data": {7: 1}, "uint64_data": {12: 1, 13: 1}, "string_data": {8: 1}}
INT32_FIELD_TYPES = (2, 3, 4, 5, 6, 9, 10, 16, 17, 18, 19, 20)  # int32_data holds these
SUB_BYTE_TYPES = (21, 22, 23)  # int4, uint4, float4: packed, two to a byte; not checked here


def check_model(model, path: str) -> None:
    """AitError for what makes `model` (read from `path`) no valid graph to import."""
    if not model.HasField("graph") or not (model.graph.node or model.graph.output):
        raise AitError(f"{path}: holds no ONNX graph (an empty or cut-short file?)")
    graph = model.graph
    if not graph.output:
        raise AitError(f"{path}: the graph has no outputs; ONNX Runtime refuses such a model")
    written: dict = {}

    def assign(name: str, what: str) -> None:
        if name not in written:
            written[name] = what
            return
        if what == written[name] == "a graph input":
            raise AitError(f"{path}: the graph lists input {shown(name)} twice (the ONNX checker "
                           "refuses this one)")
        raise AitError(f"{path}: tensor {shown(name)} is {written[name]} and {what} again; an "
                       "ONNX graph assigns each tensor once (the ONNX checker refuses this one)")

    initializers = set()
    for init in graph.initializer:
        assign(init.name, f"initializer {shown(init.name)}")
        check_initializer(init, path)
        initializers.add(init.name)
    for inp in graph.input:
        if inp.name in initializers:
            continue  # an initializer listed as an input too (old exporters)
        assign(inp.name, "a graph input")
    for index, node in enumerate(graph.node):
        what = f"node {index} {shown(node.name or node.op_type)} ({node.op_type})"
        for name in node.input:
            if name and name not in written:
                raise AitError(f"{path}: {what} reads tensor {shown(name)}, which no graph input, "
                               "initializer or earlier node writes (ONNX lists nodes in order)")
        for name in node.output:
            if name:
                assign(name, f"written by {what}")
    for out in graph.output:
        if out.name not in written:
            raise AitError(f"{path}: the graph's output {shown(out.name)} is written by no node, "
                           "input or initializer")


def check_initializer(init, path: str) -> None:
    """The initializer's data holds exactly the elements its dims say."""
    what = f"{path}: initializer {shown(init.name)}"
    if any(d < 0 for d in init.dims):
        raise AitError(f"{what} has a negative size in its dims {list(init.dims)}")
    if init.data_location == 1:  # EXTERNAL: onnx.load reads it into raw_data when it can
        raise AitError(f"{what} keeps its data in an external file that was not read; put "
                       "that file beside the model")
    if init.data_type in SUB_BYTE_TYPES:
        return
    elements = 1
    for d in init.dims:
        elements *= d
    if init.HasField("raw_data"):
        itemsize = _itemsize(init.data_type)
        if itemsize and len(init.raw_data) != elements * itemsize:
            raise AitError(f"{what} has dims {list(init.dims)} ({elements} elements) but "
                           f"{len(init.raw_data)} bytes of data")
        return
    held = _typed_count(init)
    if held is not None and held != elements:
        raise AitError(f"{what} has dims {list(init.dims)} ({elements} elements) but "
                       f"{held} values")


def _itemsize(data_type: int) -> int:
    from onnx import helper
    try:
        return helper.tensor_dtype_to_np_dtype(data_type).itemsize
    except (KeyError, TypeError, ValueError):
        return 0  # a type without a NumPy one: the translation names it


def _typed_count(init) -> int | None:
    """How many elements the typed field of the initializer's type holds (None: unknown type)."""
    if init.data_type in INT32_FIELD_TYPES:
        return len(init.int32_data)
    for field, per_element in TYPED_FIELDS.items():
        if init.data_type in per_element:
            return len(getattr(init, field)) // per_element[init.data_type]
    return None
