"""Rows of the op -> lowering tables that every backend shares: elementwise programs and data
movement are the same index arithmetic on any device, and each backend renders them into its own
templates (Backend.templates, by kind). Backends spread these into their LOWER table."""

from __future__ import annotations

from ait_build.codegen import (concat_elementwise, data_movement, elementwise, index_ops, resize,
                              rows_and_windows, strided_copy)

# one expression per element (templates/<backend>/elementwise.*.j2)
ELEMENTWISE = {
    **{op: elementwise.lower_simple for op in (
        "relu", "silu", "sigmoid", "tanh", "hardswish", "gelu", "add", "sub", "mul", "div",
        "cast", "sqrt", "exp", "erf", "clamp", "relu6", "hardtanh", "leaky_relu", "minimum",
        "maximum", "floor_divide", "remainder", "equal", "not_equal", "less", "less_equal", "greater",
        "greater_equal", "logical_and", "logical_or", "logical_not", "where", "sin", "cos", "log",
        "ceil", "abs", "sign", "floor", "round", "trunc", "expm1", "log1p", "tan", "atan")},
    "fused_elementwise": elementwise.lower_fused,
    "rotary_embedding": elementwise.lower_rotary,
    "batch_norm": elementwise.lower_batch_norm,
}

# views where possible, else one strided-copy template; gather by index
DATA_MOVEMENT = {
    "identity": data_movement.lower_view,
    "reshape": data_movement.lower_view,
    "flatten": data_movement.lower_view,
    "permute": data_movement.lower_permute,
    "transpose": data_movement.lower_permute,
    "expand": data_movement.lower_expand,
    "slice": data_movement.lower_slice,
    "concat": data_movement.lower_concat,
    "concat_elementwise": concat_elementwise.lower_concat_elementwise,  # a concat + its program
    "split": data_movement.lower_split,
    "pad": strided_copy.lower_pad,  # one pass: the pad value where no input lands
    "strided_copy": strided_copy.lower_strided_copy,  # a fused chain of the ops above
    "gather": data_movement.lower_gather,
    "gather_elements": data_movement.lower_elements_by_index,
    "permute_elements": data_movement.lower_elements_by_index,  # gather_elements' inverse
    "roll": index_ops.lower_roll,
}

# values written by position: fills and iotas (the elementwise template with no operand)
GENERATE = {
    "constant": index_ops.lower_constant,
    "iota": index_ops.lower_iota,
}

# rows and windows whose loops are the same everywhere (templates/<backend>/{softmax,pool2d,...})
ROWS_AND_WINDOWS = {
    "softmax": rows_and_windows.lower_softmax,
    "max_pool2d": rows_and_windows.lower_pool,
    "avg_pool2d": rows_and_windows.lower_pool,
    "global_avg_pool": rows_and_windows.lower_global_avg_pool,
    "resize2d": resize.lower_resize,
    "cumsum": rows_and_windows.lower_cumsum,
}
