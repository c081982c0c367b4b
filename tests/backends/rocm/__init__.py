"""The rocm backend's tests: rendering checks run everywhere hipcc is; compile-only checks carry
the `hipcc` mark."""

import shutil

import pytest


def skip_without_hipcc() -> None:
    """Skips the rest of a test that renders a library for mi250 where ROCm's hipcc is not on
    PATH (emit records the compiler's version in the manifest); `.ci/run` installs it first."""
    if shutil.which("hipcc") is None:
        pytest.skip("hipcc not on PATH (Debian: apt-get install hipcc libamdhip64-dev)")
