"""ait-build: a declarative model compiler.

YAML model and target specs -> optimized op graph -> rendered C++/CUDA/HIP kernels -> SCons-built
shared library per model and target.
"""

__version__ = "0.1.0"
