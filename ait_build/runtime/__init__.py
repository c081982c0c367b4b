"""Running built models: `Model(build_dir)` over the generated C API (see docs/runtime.md)."""

from ait_build.runtime.manifest import Manifest, ModelError, load_manifest
from ait_build.runtime.model import Model

__all__ = ["Manifest", "Model", "ModelError", "load_manifest"]
