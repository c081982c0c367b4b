"""Sorting, selection, products and running extremes (importers/ordering.py, the handlers in
torch_scans.py) against PyTorch, through the reference and a cpu build; the size limits as
clear errors."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cases import rel_error, torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
CASE = "tests.importers.families:ordering"


def test_sorting_and_selection_match_pytorch(tmp_path, build_spec):
    spec, _, graph = import_case((CASE, ["x:batch,6,10"], ["batch=1:4:2"], None), tmp_path,
                                 "ordering")
    model, _, _ = build_spec(spec, name="ordering")
    for batch in (1, 3):
        inputs = {"x": (np.random.default_rng(batch).standard_normal((batch, 6, 10)) * 2)
                  .astype(np.float32)}
        want = torch_outputs(CASE, inputs)
        for got in (run_reference(graph, inputs), model.run(inputs)):
            for out, expected in zip(graph.outputs, want):
                if expected.dtype.kind in "iu":  # indices and integer values: exactly
                    np.testing.assert_array_equal(got[out].reshape(expected.shape), expected,
                                                  err_msg=out)
                else:
                    assert rel_error(got[out].reshape(expected.shape), expected) < 2e-6, out


class SortAlong(torch.nn.Module):
    def forward(self, x):
        return torch.sort(x, dim=0)[0], torch.topk(x.flatten(1), 2)[1]


def sort_along():
    return SortAlong()


@pytest.mark.parametrize("shape, dims, message", [
    ("batch,4", ["batch=1:4096:2"], "along batch elements (up to 4096): the importer sorts by "
     "comparing every pair, at most 2048"),
    ("2,3000", [], "along 3000 elements (up to 3000)"),
])
def test_sorts_too_long_to_compose_are_clear_errors(tmp_path, shape, dims, message):
    from ait_build.errors import AitError
    factory = "tests.importers.test_ordering:sort_along"
    with pytest.raises(AitError, match=message.replace("(", r"\(").replace(")", r"\)")):
        import_case((factory, [f"x:{shape}"], dims, None), tmp_path, "sort_along")


def test_sorts_along_a_run_time_size_match_pytorch(tmp_path):
    """Along the batch (a dim of at most 8 here): the pair table's size at run time."""
    factory = "tests.importers.test_ordering:sort_along"
    _, _, graph = import_case((factory, ["x:batch,4"], ["batch=1:8:2"], None), tmp_path, "dyn")
    for batch in (1, 3, 8):
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
        got = run_reference(graph, {"x": x})
        for out, expected in zip(graph.outputs, torch_outputs(factory, {"x": x})):
            np.testing.assert_array_equal(got[out], expected, err_msg=out)


class SortNaN(torch.nn.Module):
    def forward(self, x):
        return (*torch.sort(x, dim=-1), *torch.topk(x, 3), torch.argsort(x, descending=True))


def sort_nan():
    return SortNaN()


def test_nan_sorts_as_the_largest_value_as_in_pytorch(tmp_path):
    """NaN after every number ascending, first descending, NaNs in position order."""
    factory = "tests.importers.test_ordering:sort_nan"
    _, _, graph = import_case((factory, ["x:batch,7"], ["batch=1:4:2"], None), tmp_path, "nan")
    x = np.array([[3, np.nan, -1, 2, np.nan, 2, 0], [np.nan, 1, 1, np.nan, -5, 4, 4]],
                 np.float32)
    got = run_reference(graph, {"x": x})
    for out, expected in zip(graph.outputs, torch_outputs(factory, {"x": x})):
        np.testing.assert_array_equal(got[out], expected, err_msg=out)


class RouterOrder(torch.nn.Module):
    """A mixture of experts' routing as transformers writes it (integrations/moe.py): the
    routed rows sorted by expert, the order's inverse written with index_put, a descending
    argsort of the same ids (experts' ids are topk's indices, 0..7), and ids concatenated from
    two picks by max (PhiMoE's router)."""

    def forward(self, logits):
        _, ids = torch.topk(logits.softmax(-1), 2, dim=-1)
        flat = ids.reshape(-1)
        by_expert, order = torch.sort(flat)
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(order.numel())
        picks = torch.cat([logits.max(-1, keepdim=True)[1], ids[:, 1:]], -1).reshape(-1)
        return (by_expert, order, inverse, torch.argsort(ids, dim=-1, descending=True, stable=True),
                torch.sort(picks)[1])


def router_order():
    return RouterOrder()


def test_expert_ids_sort_by_counting_beyond_the_pair_limit(tmp_path, build_spec):
    """2 x 4096 routed rows (the pair table's limit is 2048): topk's indices are positions
    along 8 experts, so the sort counts them, and writing its order back reads its inverse;
    no [n, n] table in the graph."""
    factory = "tests.importers.test_ordering:router_order"
    spec, _, graph = import_case((factory, ["logits:tokens,8"], ["tokens=1:4096:64"], None),
                                 tmp_path, "router")
    assert [n.op for n in graph.nodes].count("permute_elements") == 3
    model, _, _ = build_spec(spec, name="router")
    for tokens in (1, 5, 4096):
        logits = np.random.default_rng(tokens).standard_normal((tokens, 8)).astype(np.float32)
        by_expert, _, _, descending, _ = torch_outputs(factory, {"logits": logits})
        top = np.argsort(-logits, axis=-1, kind="stable")[:, :2]
        flat = top.reshape(-1)
        for got in (run_reference(graph, {"logits": logits}), model.run({"logits": logits})):
            got = [got[out] for out in graph.outputs]
            np.testing.assert_array_equal(got[0], by_expert)
            # PyTorch's sort leaves ties open; ours keeps them in position order, as a stable
            # sort does, and the written inverse undoes the order
            np.testing.assert_array_equal(got[1], np.argsort(flat, kind="stable"))
            np.testing.assert_array_equal(got[2][got[1]], np.arange(2 * tokens))
            np.testing.assert_array_equal(got[3].reshape(descending.shape), descending)
            np.testing.assert_array_equal(got[4], np.argsort(flat, kind="stable"))  # max = top
