"""The importer tests build with the codegen tests' helpers (compile once per kernel per session)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/

from codegen.conftest import build_spec, cpu_target, object_cache  # noqa: E402,F401  (fixtures)
