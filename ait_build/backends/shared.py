"""Rows of the op -> lowering tables that every backend shares: elementwise programs and data
movement are the same index arithmetic on any device, and each backend renders them into its own
templates (see codegen/kernel.template_for). Backends spread these into their LOWER table."""

from __future__ import annotations

from ait_build.codegen import cpu_data, cpu_elementwise, cpu_norm, index_ops

# one expression per element (templates/<backend>/elementwise.*.j2)
ELEMENTWISE = {
    **{op: cpu_elementwise.lower_simple for op in (
        "relu", "silu", "sigmoid", "tanh", "hardswish", "gelu", "add", "sub", "mul", "div",
        "cast")},
    # clamps, minimum/maximum, comparisons, logic, where: more expressions of the same template
    **{op: cpu_elementwise.lower_simple for op in (
        "sqrt", "exp", "erf", "clamp", "relu6", "hardtanh", "minimum", "maximum", "equal", "not_equal", "less",
        "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_not",
        "where")},
    "fused_elementwise": cpu_elementwise.lower_fused,
    "batch_norm": cpu_elementwise.lower_batch_norm,
}

# views where possible, else one strided-copy template; gather by index
DATA_MOVEMENT = {
    "identity": cpu_data.lower_view,
    "reshape": cpu_data.lower_view,
    "flatten": cpu_data.lower_view,
    "permute": cpu_data.lower_permute,
    "transpose": cpu_data.lower_permute,
    "expand": cpu_data.lower_expand,
    "slice": cpu_data.lower_slice,
    "concat": cpu_data.lower_concat,
    "split": cpu_data.lower_split,
    "pad": cpu_data.lower_pad,
    "gather": cpu_data.lower_gather,
    "roll": index_ops.lower_roll,
}

# values written by position: fills and iotas (the elementwise template with no operand)
GENERATE = {
    "constant": index_ops.lower_constant,
    "iota": index_ops.lower_iota,
}

# rows and windows whose loops are the same everywhere (templates/<backend>/{softmax,pool2d,...})
ROWS_AND_WINDOWS = {
    "softmax": cpu_norm.lower_softmax,
    "max_pool2d": cpu_norm.lower_pool,
    "avg_pool2d": cpu_norm.lower_pool,
    "global_avg_pool": cpu_norm.lower_global_avg_pool,
}
