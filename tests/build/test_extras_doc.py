"""The docs list exactly what the importer's extras install (pyproject.toml's
optional-dependencies): docs/import.md's sentence and docs/install.md's table rows for [torch]
and [onnx]; and the CPU-only PyTorch route both documents works with the extra's pins (the CPU
wheels' versions carry a `+cpu` local label)."""

from __future__ import annotations

import os
import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CPU_ROUTE = ("pip install torch torchvision --index-url https://download.pytorch.org/whl/cpu\n"
             'pip install "ait-build[torch]"\n')


def read(rel: str) -> str:
    with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
        return fh.read()


def extra(name: str) -> list:
    """The Requirements of pyproject.toml's extra `name`."""
    extras = tomllib.loads(read("pyproject.toml"))["project"]["optional-dependencies"]
    return [Requirement(r) for r in extras[name]]


def names(listing: str) -> set:
    """Package names of a prose list: "a, b and c" (spaces and line breaks as written)."""
    return {n.strip() for n in re.split(r",|\band\b", " ".join(listing.split())) if n.strip()}


@pytest.mark.parametrize("name", ["torch", "onnx"])
def test_import_md_lists_what_the_extra_installs(name):
    text = " ".join(read("docs/import.md").split())
    m = re.search(rf'`pip install "ait-build\[{name}\]"` installs (.+?)(?: \(|, which)', text)
    assert m, f"docs/import.md does not say what [{name}] installs"
    listed = names(m.group(1).removesuffix(" alone"))
    assert listed == {r.name for r in extra(name)}


@pytest.mark.parametrize("name", ["torch", "onnx"])
def test_install_md_table_lists_what_the_extra_installs(name):
    (row,) = [line for line in read("docs/install.md").splitlines()
              if line.startswith(f"| `[{name}]` |")]
    listed = names(row.split("|")[2].split(":")[0].split(", for ")[0])
    assert listed == {r.name for r in extra(name)}


def test_cpu_only_pytorch_route_is_documented_and_fits_the_pins():
    for doc in ("docs/import.md", "docs/install.md"):
        assert CPU_ROUTE in read(doc), doc
    pins = {r.name: r.specifier for r in extra("torch")}
    # the oldest CPU wheels the pins name, and ones as new as any this was written with
    for torch, torchvision in (("2.2.0+cpu", "0.17.0+cpu"), ("2.14.1+cpu", "0.29.1+cpu")):
        assert pins["torch"].contains(Version(torch)), (pins["torch"], torch)
        assert pins["torchvision"].contains(Version(torchvision)), (pins["torchvision"], torchvision)
