"""docs/ci.md shows the workflow `ait-build init` writes, verbatim, and names its pins."""

from __future__ import annotations

import os
import re

import yaml

from installed import REPO


def _read(*parts) -> str:
    with open(os.path.join(REPO, *parts), encoding="utf-8") as fh:
        return fh.read()


def test_docs_show_the_workflow_that_init_writes():
    workflow = _read("ait_build", "project_files", "ait-build.yml")
    doc = _read("docs", "ci.md")
    blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    assert workflow in blocks


def test_the_pins_the_docs_name_are_the_workflows():
    workflow = yaml.safe_load(_read("ait_build", "project_files", "ait-build.yml"))
    pins = dict(p.split("==") for p in workflow["env"]["NVCC_PACKAGES"].split())
    doc = " ".join(_read("docs", "ci.md").split())
    assert pins["nvidia-cuda-nvcc"] == "13.0.88" and "nvcc 13.0.88" in doc
    assert set(pins) == {"nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-crt",
                         "nvidia-cuda-runtime", "nvidia-cuda-cccl"}
    for name in pins:
        assert f"`{name}`" in doc, name
    assert "nvidia-cutlass==4.2.0.0" in _read("pyproject.toml") and "nvidia-cutlass==4.2.0.0" in doc
