"""docs/ci.md shows the workflow and the requirements file that `ait-build init` writes,
verbatim, and names their pins."""

from __future__ import annotations

import os
import re

from ait_build.backends.cuda.toolchain import CUTLASS_WHEEL
from ait_build.backends.toolchain import NVCC_WHEELS
from ait_build.cli.init import init_fields
from installed import REPO


def _read(*parts) -> str:
    with open(os.path.join(REPO, *parts), encoding="utf-8") as fh:
        return fh.read()


def test_docs_show_the_workflow_that_init_writes():
    workflow = _read("ait_build", "project_files", "ait-build.yml")
    doc = _read("docs", "ci.md")
    assert workflow in re.findall(r"```yaml\n(.*?)```", doc, re.S)


def test_docs_show_the_requirements_file_that_init_writes():
    requirements = _read("ait_build", "project_files", "ci-requirements.txt").format(**init_fields())
    doc = _read("docs", "ci.md")
    assert requirements in re.findall(r"```text\n(.*?)```", doc, re.S)


def test_the_pins_the_docs_name_are_the_requirements():
    pins = dict(p.split("==") for p in NVCC_WHEELS)
    doc = " ".join(_read("docs", "ci.md").split())
    assert pins["nvidia-cuda-nvcc"] == "13.0.88" and "nvcc 13.0.88" in doc
    assert set(pins) == {"nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-crt",
                         "nvidia-cuda-runtime", "nvidia-cuda-cccl"}
    for name in pins:
        assert f"`{name}`" in doc, name
    assert CUTLASS_WHEEL in doc and "--no-deps" in doc
    assert "nvidia-cutlass" not in _read("pyproject.toml").split("[project.scripts]")[0].split(
        "cuda = ")[1].split("\n")[0]  # the extra leaves the CUTLASS wheel to install-cutlass
