"""Fixtures for the build tests: a built project shared per module, and private copies of it."""

import pytest

from buildproj import Project, make_project


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Project:
    """One clean build of the model, shared read-only by a module's tests (copy it to change it)."""
    project = make_project(str(tmp_path_factory.mktemp("built") / "proj"), shared_cache=True)
    project.scons("target=cpu")
    return project


@pytest.fixture
def fresh(built, tmp_path) -> Project:
    """A private copy of the built project, build/ and signatures included; its builds go through
    its own build/cache (empty: the module's build went through the run's cache)."""
    return built.copy(str(tmp_path / "proj"))
