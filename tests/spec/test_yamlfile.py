"""The YAML reader: positions on every entry, anchors used sensibly, and its limits."""

from __future__ import annotations

import os

import pytest

from ait_build.errors import Location, SpecError
from ait_build.spec import yamlfile
from ait_build.spec.yamlfile import YList, YMap, parse_yaml


def test_entries_remember_where_they_are():
    doc = parse_yaml("a: 1\nb:\n  - x\n  - {c: 2}\n", "f.yaml")
    assert isinstance(doc, YMap) and isinstance(doc["b"], YList)
    assert doc.key_loc["b"] == Location("f.yaml", 2, 1)
    assert doc["b"].where(1) == Location("f.yaml", 4, 5)
    assert doc["b"][1].where("c") == Location("f.yaml", 4, 9)


def test_scalars_resolve_like_yaml_1_1_except_dates():
    doc = parse_yaml("a: 12\nb: 0x10\nc: 1.5e-3\nd: true\ne: ~\nf: '12'\ng: 2024-01-02\nh: 0o17\n", "f")
    assert doc == {"a": 12, "b": 16, "c": 0.0015, "d": True, "e": None, "f": "12", "g": "2024-01-02",
                   "h": "0o17"}


def test_anchors_and_aliases_share_values():
    doc = parse_yaml("base: &cfg {kernel: 3, stride: 1}\nconv: *cfg\n", "f")
    assert doc["conv"] == {"kernel": 3, "stride": 1}


def test_empty_documents_before_the_spec_are_ignored():
    assert parse_yaml("---\n---\na: 1\n", "f") == {"a": 1}


def test_node_limit_counts_expanded_aliases(monkeypatch):
    monkeypatch.setattr(yamlfile, "MAX_NODES", 50)
    text = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nb: [*a, *a, *a, *a]\n"
    with pytest.raises(SpecError, match="alias expands the document to more than 50") as info:
        parse_yaml(text, "f")
    assert info.value.loc == Location("f", 2, 17)  # the alias that passes the limit


def test_file_size_limit(monkeypatch, tmp_path):
    monkeypatch.setattr(yamlfile, "MAX_FILE_BYTES", 100)
    path = tmp_path / "big.yaml"
    path.write_text("a: " + "x" * 200 + "\n")
    with pytest.raises(SpecError, match="larger than"):
        yamlfile.load_yaml(str(path))


def test_a_directory_is_not_a_spec(tmp_path):
    with pytest.raises(SpecError, match="is a directory"):
        yamlfile.load_yaml(str(tmp_path))


def test_pipes_and_devices_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    for path in (str(fifo), "/dev/zero"):
        with pytest.raises(SpecError, match="is not a regular file"):
            yamlfile.load_yaml(path)
