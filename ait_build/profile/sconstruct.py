# The SConstruct of profiling harnesses (ait_build/profile/build.py); `ait-build profile` runs it.
from ait_build.profile.build import setup

setup(ARGUMENTS)  # noqa: F821 (SCons provides ARGUMENTS)
