"""Run-time settings of a library (AIT_NUM_THREADS, AIT_CUDA_GRAPHS, AIT_DEPENDENT_LAUNCH, ...):
the generated create() reads them from the environment once, so a Model made under some settings
keeps them, and the variables can be restored right after (docs/runtime.md)."""

from __future__ import annotations

import contextlib
import os

from ait_build.runtime.model import Model


@contextlib.contextmanager
def environment(settings: dict):
    """The variables of `settings` set while the block runs, then restored (or removed again)."""
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update({name: str(value) for name, value in settings.items()})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def model_with(build_dir: str, settings: dict, **kwargs) -> Model:
    """Model(build_dir, **kwargs) created under `settings`; the environment is left as it was."""
    with environment(settings):
        return Model(build_dir, **kwargs)
