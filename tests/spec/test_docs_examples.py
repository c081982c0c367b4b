"""docs/spec.md stays true: its YAML examples load (or fail as they say), and its limits table
matches the constants in the code."""

from __future__ import annotations

import importlib
import os
import re

import pytest
import yaml

from ait_build.errors import SpecError
from ait_build.pipeline import check_file

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   "docs", "spec.md")


def _text() -> str:
    with open(DOC, encoding="utf-8") as fh:
        return fh.read()


def _examples() -> list:
    return re.findall(r"```yaml\n(.*?)```", _text(), re.S)


def test_the_page_has_complete_examples_of_every_kind():
    kinds = {yaml.safe_load(block).get("kind") for block in _examples()
             if isinstance(yaml.safe_load(block), dict)}
    assert {"Model", "Blocks", "Target"} <= kinds


def test_every_yaml_example_is_valid(tmp_path):
    """Examples are written in page order under their `# file:` names (so includes resolve) and
    checked; an `# expect-error:` example must fail with that message."""
    checked = 0
    for block in _examples():
        first = block.splitlines()[0]
        data = yaml.safe_load(block)
        if not isinstance(data, dict) or "apiVersion" not in data:
            continue  # a fragment: it must still be YAML, which safe_load just showed
        name = first.split(":", 1)[1].strip() if first.startswith("# file:") else f"example{checked}.yaml"
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block)
        if first.startswith("# expect-error:"):
            with pytest.raises(SpecError) as info:
                check_file(str(path))
            assert first.split(":", 1)[1].strip() in info.value.message
        elif data.get("kind") != "Blocks":  # block files are checked through the models using them
            assert check_file(str(path)).startswith("ok")
        checked += 1
    assert checked >= 7


def test_examples_say_what_they_build(tmp_path):
    from ait_build.spec.model import load_model
    for block in _examples():
        if block.startswith("# file:"):
            name = block.splitlines()[0].split(":", 1)[1].strip()
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(block)
    mlp = load_model(str(tmp_path / "mlp.yaml"))
    assert mlp.weight_names() == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    tied = load_model(str(tmp_path / "tied.yaml"))
    assert tied.weight_names() == ["pos", "shared.weight"]
    user = load_model(str(tmp_path / "blocks_user.yaml"))
    names = [n.name for n in user.nodes]
    assert names[:4] == ["stem.fc1", "stem.act", "stem.fc2", "stem.out"]
    assert "layers.0.add" not in names and "layers.2.add" in names and names[-1] == "head"
    assert [d.value for d in user.tensors["layers.1.fc1.weight"].shape] == [128, 16]


def test_limits_table_matches_the_code():
    rows = re.findall(r"^\| [^|]+ \| ([^|]+) \| `spec/(\w+)\.py` `(\w+)` \|$", _text(), re.M)
    assert len(rows) >= 10
    for limit, module, constant in rows:
        value = getattr(importlib.import_module(f"ait_build.spec.{module}"), constant)
        mib = re.search(r"(\d+) MiB", limit)
        shown = int(mib.group(1)) * 1024 * 1024 if mib else max(int(n) for n in re.findall(r"\d+", limit))
        assert shown == value, (constant, limit, value)
