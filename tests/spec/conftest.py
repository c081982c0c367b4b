"""Helpers for the spec loader tests: write small spec files into a temporary folder."""

from __future__ import annotations

import textwrap

import pytest

HEADER = "apiVersion: ait-build/v1\nkind: {kind}\n"


@pytest.fixture
def write(tmp_path):
    """write(relpath, body, kind='Model') -> path; the body is dedented and gets the header."""

    def _write(rel: str, body: str, kind: str = "Model") -> str:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HEADER.format(kind=kind) + textwrap.dedent(body))
        return str(path)

    return _write
