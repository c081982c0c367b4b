"""Sizes torch.export computes in floats (importers/boundaries.py guards_hold, from_torch.py
_whole_quotient, torch_ops.py _arange): XLNet's relative positions, `arange(seq, -seq, -1.0)`,
whose length torch.export keeps as ceil(float(-2 * seq) / -1.0). torch.export cannot prove its
guards on that length over a --dim range; they hold at every size, so the import exports again
with the range as a hint, reads the length as 2 * seq and the start as a run-time size, and
matches PyTorch at sizes it was not exported at."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import rel_error, torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.importers.boundaries import constraint_error, export_error, guards_hold  # noqa: E402
from ait_build.importers.options import parse_dim  # noqa: E402
from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
FACTORY = "tests.importers.test_size_guards:relative_positions"


class RelativePositions(torch.nn.Module):
    """XLNet's relative_positional_encoding's aranges (start a size, a float step)."""

    def forward(self, x):
        n = x.shape[1]
        forward = torch.arange(n, -n, -1.0, dtype=torch.int64).float()
        backward = torch.arange(-n, n, 1.0, dtype=torch.int64).float()
        return x * forward[:n, None] + x * backward[n:, None]


def relative_positions():
    return RelativePositions()


def test_arange_over_a_float_length_from_a_size_matches_torch(tmp_path):
    _, _, built = import_case((FACTORY, ["x:batch,seq,4"], ["batch=1:4:2", "seq=2:32:8"], None),
                              tmp_path, "relpos")
    rng = np.random.default_rng(3)
    for shape in [(2, 2, 4), (1, 13, 4), (3, 32, 4)]:
        x = rng.standard_normal(shape).astype(np.float32)
        (want,) = torch_outputs(FACTORY, {"x": x})
        got = run_reference(built, {"x": x})[built.outputs[0]]
        assert got.shape == want.shape and rel_error(got, want) < 1e-6, shape


def _text(guard: str) -> str:
    return ("Constraints violated (seq)! ...\n  - Not all values of seq = L['x'].size()[1] in the "
            f"specified range 2 <= seq <= 64 satisfy the generated guard {guard}.")


def test_guards_are_shown_to_hold_only_at_every_size_of_the_range():
    dims = {"seq": parse_dim("seq=2:64:8")}
    holds = "math.ceil(((torch.sym_float((-2)*L['x'].size()[1])) / (-1.0))) != L['x'].size()[1]"
    assert guards_hold(_text(holds), dims) == {"seq"}
    assert not guards_hold(_text("L['x'].size()[1] != 5"), dims)  # false at 5: the range is wrong
    assert not guards_hold(_text("__import__('os').getpid() > 0"), dims)  # only size arithmetic
    assert not guards_hold("Constraints violated (seq)!", dims)  # nothing to evaluate


def test_a_dim_the_model_fixes_is_said_by_its_size():
    """CANINE fixes its sequence to the example's length: the line names the size, not
    torch's 'Constraints violated (seq)!'."""
    text = ("Constraints violated (seq)! For more information, run with TORCH_LOGS=\"+dynamic\".\n"
            "  - You marked seq as dynamic but your code specialized it to be a constant (16). "
            "If you're using mark_dynamic, either remove it or use maybe_mark_dynamic.")
    assert not guards_hold(text, {"seq": parse_dim("seq=4:64:16")})
    said = str(constraint_error(text))
    assert "the model fixes seq to 16" in said and "\n" not in said, said


def test_a_stop_inside_torch_names_the_models_last_line():
    """Longformer's chunked attention stops inside torch (as_strided's strides from a
    data-dependent size): the line adds the model's last line torch.export traced."""
    text = ("Could not guard on data-dependent expression Eq(u4, 1)\n"
            "    # File: /x/site-packages/transformers/models/longformer/modeling_longformer.py:"
            "531 in forward, code: diagonal_mask = self._sliding_chunks_query_key_matmul(\n"
            "    # File: /x/site-packages/torch/nn/modules/linear.py:134 in forward, code: "
            "return F.linear(input, self.weight, self.bias)\n"
            "Caused by: (_subclasses/fake_impls.py:904 in _compute_stride)\n")
    said = str(export_error(RuntimeError(text)))
    assert said.startswith("torch.export stopped at a shape computed from tensor values at "
                           "fake_impls.py:904 in _compute_stride (in torch, after "
                           "the model's modeling_longformer.py:531: diagonal_mask = "), said
    assert "\n" not in said, said


def test_a_stop_in_the_models_own_file_names_it_whole():
    """torch cuts every path by its install prefix's length: a model file outside it came out
    as 'ork/main/...'; the line names the file."""
    text = ("Could not guard on data-dependent expression Eq(u0, 1)\n"
            "Caused by: (ork/main/bench/results/repro.py:44 in forward)\n")
    said = str(export_error(RuntimeError(text)))
    assert said.startswith("torch.export stopped at a shape computed from tensor values at "
                           "repro.py:44 in forward (post-processing"), said
