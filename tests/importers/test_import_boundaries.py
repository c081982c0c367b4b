"""Where an import of a PyTorch model stops, said in one line (importers/boundaries.py): the
transformers KV cache turned off (and an empty one's concat left out), a detector taken up to its
head, a shape computed from tensor values; and what the import reports on the way (progress, the model's own line of an
unsupported op)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import families  # noqa: E402
from cases import rel_error, torch_outputs  # noqa: E402
from test_import_torch import import_case  # noqa: E402

from ait_build.errors import AitError  # noqa: E402
from ait_build.importers.boundaries import prepare  # noqa: E402
from ait_build.importers.from_torch import import_torch  # noqa: E402
from ait_build.importers.graph import ImportFailure  # noqa: E402
from ait_build.importers.options import dims_for, parse_dim, parse_input  # noqa: E402
from ait_build.importers.simplify import simplify  # noqa: E402
from ait_build.importers.write import write_spec  # noqa: E402
from ait_build.ops.reference import run_reference  # noqa: E402

pytestmark = pytest.mark.torch
F = "tests.importers.families:"


def _import(factory, input_texts, dim_texts=(), say=None):
    inputs = [parse_input(t) for t in input_texts]
    dims = dims_for(inputs, [parse_dim(t) for t in dim_texts])
    return import_torch(factory, None, inputs, dims, "m", say=say)


def test_cache_outputs_import_with_the_cache_off_said_once(tmp_path):
    pytest.importorskip("transformers")
    said = []
    graph = _import(F + "gpt2_with_cache", ["input_ids:batch,seq:int64"],
                    ["batch=1:2:1", "seq=2:16:8"], said.append)
    notes = [line for line in said if line.startswith("note:")]
    assert notes == ["note: GPT2Model: use_cache turned off (a KV cache is not an output of the "
                     "spec)"], said
    assert said[:2] == [f"loading {F}gpt2_with_cache", notes[0]]
    assert said[2:] == ["exporting with torch.export", said[3]] and \
        said[3].startswith("translating ") and said[3].endswith(" ATen operations"), said
    simplify(graph)
    _, _, built = write_spec(graph, str(tmp_path / "gpt2.yaml"), "test")
    ids = np.random.default_rng(0).integers(0, 100, (1, 8))
    with torch.no_grad():
        want = families.gpt2_with_cache()(torch.from_numpy(ids)).last_hidden_state.numpy()
    got = run_reference(built, {"input_ids": ids})[built.outputs[0]]
    assert rel_error(got, want) < 1e-5


def test_empty_pieces_of_a_concat_are_left_out(tmp_path):
    """torch.cat leaves out empty pieces (a key/value cache before the first step, as OPT,
    BLOOM and GPT-NeoX start theirs), and so does the import: no piece becomes a parameter of
    no elements."""
    _, _, built = import_case((F + "empty_past", ["x:batch,seq,6"], ["batch=1:2:1", "seq=1:8:4"],
                               None), tmp_path, "empty_past")
    assert not [n for n in built.nodes if n.op == "concat"], [n.op for n in built.nodes]
    x = np.random.default_rng(1).standard_normal((2, 5, 6)).astype(np.float32)
    (want,) = torch_outputs(F + "empty_past", {"x": x})
    got = run_reference(built, {"x": x})[built.outputs[0]]
    assert rel_error(got, want) < 1e-6


def test_a_shape_from_tensor_values_stops_in_one_line():
    with pytest.raises(AitError) as info:
        _import(F + "data_dependent", ["x:2,8"])
    text = str(info.value)
    assert text.startswith("torch.export stopped at a shape computed from tensor values")
    assert "\n" not in text and len(text) < 400, text


def test_a_dim_range_the_model_does_not_take_is_said_in_one_line():
    """torch.export's 'Constraints violated' as the guard on the dim, by its name."""
    with pytest.raises(AitError) as info:
        _import(F + "not_every_size", ["x:batch,seq"], ["batch=1:2:1", "seq=2:16:8"])
    text = str(info.value)
    assert text.startswith("torch.export: the model does not take every size the --dim ranges "
                           "allow (seq must satisfy "), text
    assert "\n" not in text and "L['" not in text and len(text) < 400, text
    _import(F + "not_every_size", ["x:batch,seq"], ["batch=1:2:1", "seq=3:16:8"])  # narrowed


def test_a_detector_imports_up_to_its_head():
    pytest.importorskip("torchvision")
    said = []
    model = families.retinanet()
    network = prepare(model, said.append)
    assert len(said) == 1 and said[0].startswith("note: RetinaNet: imported up to its head")
    # the detector's own state_dict names: a checkpoint of the detector loads into the spec
    assert set(network.state_dict()) == {k for k in model.state_dict()
                                         if k.startswith(("backbone.", "head."))}
    images = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        out = network(images)
        features = list(model.backbone(images).values())
        want = model.head(features)
    assert set(out) == {"cls_logits", "bbox_regression"}
    assert all(torch.equal(out[k], want[k]) for k in out)


def test_unsupported_op_inside_a_torch_module_names_the_models_line():
    with pytest.raises(ImportFailure) as info:
        _import(F + "fold_inside", ["x:8,4"])  # unbatched: refused
    lines, start = inspect.getsourcelines(families.FoldInside.forward)
    line = start + next(i for i, text in enumerate(lines) if "self.fold(x)" in text)
    assert f"families.py:{line} (aten.col2im" in str(info.value), str(info.value)
