"""LSTM and GRU layers, unrolled over their (static) sequence length.

Each layer and direction is one linear over the whole sequence for the input's share of the
gates (one GEMM for every time step), then per step a linear of the previous hidden state and
the gate arithmetic, which the optimizer fuses into one elementwise kernel per step. So a
recurrent layer runs on the GEMMs and elementwise kernels every backend already has, in
float16 on the GPUs too, at the cost of a graph that grows with the sequence (about five nodes
a step) and of steps that cannot overlap; a fused cell kernel looping over time on the device
is the way to long sequences (docs/import.md).

Weights follow PyTorch: per layer and direction w_ih [G*H, in], w_hh [G*H, H] and the biases,
gates in PyTorch's order (LSTM: i, f, g, o; GRU: r, z, n). The ONNX frontend reorders its
gates into this order.
"""

from __future__ import annotations

from dataclasses import dataclass

from ait_build.ir.dims import Dim


@dataclass(frozen=True)
class Cell:
    """The weights (names) of one layer in one direction."""

    w_ih: str
    w_hh: str
    b_ih: str | None
    b_hh: str | None


def run_layers(lower, kind: str, x, cells: list, hidden: int, bidirectional: bool,
               batch_first: bool, h0=None, c0=None, name: str = "") -> tuple:
    """(output [.., D*H] in x's layout of time and batch, final h of each layer and direction
    [L*D, N, H], final c for LSTM or None). `cells[layer * D + direction]`; h0, c0 as the
    sources give them ([L*D, N, H]) or None for zeros."""
    x = lower.plain(x)
    time_axis = 1 if batch_first else 0
    steps = x.source_shape[time_axis]
    if not steps.is_static:
        lower.fail(f"a recurrent layer over a sequence of symbolic length {steps} (it is "
                   "unrolled: give the sequence a fixed size)")
    directions = 2 if bidirectional else 1
    finals_h, finals_c = [], []
    for layer in range(len(cells) // directions):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            start_h = lower.select(h0, 0, k) if h0 is not None else None
            start_c = lower.select(c0, 0, k) if c0 is not None else None
            seq, h, c = _direction(lower, kind, x, cells[k], hidden, time_axis, steps.value,
                                   d == 1, start_h, start_c, f"{name}.l{layer}{'_reverse' if d else ''}")
            outs.append(seq)
            finals_h.append(h)
            finals_c.append(c)
        x = lower.concat(outs, 2) if len(outs) > 1 else outs[0]
    return x, _stack(lower, finals_h), _stack(lower, finals_c) if kind == "lstm" else None


def _stack(lower, states: list):
    rows = [lower.reshape(s, (Dim.of(1),) + tuple(s.source_shape)) for s in states]
    return lower.concat(rows, 0) if len(rows) > 1 else rows[0]


def _direction(lower, kind, x, cell: Cell, hidden: int, time_axis: int, steps: int,
               reverse: bool, h, c, name: str) -> tuple:
    gates_in = lower.linear(x, cell.w_ih, cell.b_ih, f"{name}.input")  # every step at once
    batch = x.source_shape[1 - time_axis]
    dtype = gates_in.dtype
    if h is None:
        h = lower.fill((batch, Dim.of(hidden)), 0.0, dtype)
    if kind == "lstm" and c is None:
        c = lower.fill((batch, Dim.of(hidden)), 0.0, dtype)
    outs = [None] * steps
    for t in (reversed(range(steps)) if reverse else range(steps)):
        step_in = lower.select(gates_in, time_axis, t)
        step_h = lower.linear(h, cell.w_hh, cell.b_hh, f"{name}.hidden")
        if kind == "lstm":
            h, c = _lstm_step(lower, step_in, step_h, c, hidden)
        else:
            h = _gru_step(lower, step_in, step_h, h, hidden)
        shape = (batch, Dim.of(1), Dim.of(hidden)) if time_axis == 1 else \
            (Dim.of(1), batch, Dim.of(hidden))
        outs[t] = lower.reshape(h, shape)
    return lower.concat(outs, time_axis) if steps > 1 else outs[0], h, c


def _lstm_step(lower, step_in, step_h, c, hidden: int) -> tuple:
    gates = lower.binary("add", step_in, step_h)
    i, f, g, o = lower.split(gates, -1, [hidden] * 4)
    i, f, o = (lower.unary("sigmoid", v) for v in (i, f, o))
    c = lower.binary("add", lower.binary("mul", f, c), lower.binary("mul", i, lower.unary("tanh", g)))
    return lower.binary("mul", o, lower.unary("tanh", c)), c


def _gru_step(lower, step_in, step_h, h, hidden: int):
    """n = tanh(x_n + r * (W_hn h + b_hn)): PyTorch's GRU (ONNX's linear_before_reset)."""
    ri, zi, ni = lower.split(step_in, -1, [hidden] * 3)
    rh, zh, nh = lower.split(step_h, -1, [hidden] * 3)
    r = lower.unary("sigmoid", lower.binary("add", ri, rh))
    z = lower.unary("sigmoid", lower.binary("add", zi, zh))
    n = lower.unary("tanh", lower.binary("add", ni, lower.binary("mul", r, nh)))
    return lower.binary("add", n, lower.binary("mul", z, lower.binary("sub", h, n)))
