"""spec -> passes -> plan -> files: the one place that strings the stages together.

    load_model (spec/)  ->  optimize (passes/)  ->  plan_model (codegen/ on the target's Backend,
    with the target's profile)  ->  emission / write_library (codegen/emit.py)

Each stage stays a plain function of its inputs and imports none of the later ones; this module
and its callers (SCons, the command line, the tests) are what know the order. Target files load
here too (find_target, load_target): spec/ checks them against the backend table it is handed.
"""

from __future__ import annotations

from ait_build.backends import BACKENDS, get_backend, toolchain_for
from ait_build.codegen.emit import Emission, emission, write_library
from ait_build.codegen.plan import ModelPlan, plan_model
from ait_build.codegen.tuning import Profile
from ait_build.errors import AitError, SpecError
from ait_build.passes import optimize as run_passes
from ait_build.spec import target as target_file
from ait_build.spec.check import check_spec
from ait_build.spec.model import load_model
from ait_build.spec.profile import load_profile, profile_path, profile_root, project_profile_path
from ait_build.spec.target import Target


def load_target(path: str) -> Target:
    """The target file at `path`, checked against its backend (tests/bad_specs: target_*)."""
    return target_file.load_target(path, BACKENDS)


def find_target(name_or_path: str, directory: str | None = None) -> Target:
    """A target by path, or by name: the project's targets/<name>.yaml (`directory`), else the
    stock one; checked against its backend."""
    return target_file.find_target(name_or_path, BACKENDS, directory)


def check_file(path: str) -> str:
    """`ait-build check` of one file (a model, target or blocks file): a one-line summary."""
    return check_spec(path, BACKENDS)


def resolve_target(target):
    """A Target, or the Target a name or path names."""
    return find_target(target) if isinstance(target, str) else target


def check_dtype(graph, target, backend) -> None:
    """The model's dtype must be one the target declares (capabilities.dtypes), and every tensor's
    one the backend can hold (an input, cast or constant of another dtype than the model's)."""
    dtypes = target.cap("dtypes")
    if graph.dtype not in dtypes:
        raise AitError(f"model '{graph.name}' computes in {graph.dtype}; target '{target.name}' "
                       f"supports {', '.join(dtypes)} (capabilities.dtypes)")
    for tensor in graph.tensors.values():
        if tensor.dtype not in backend.ctypes:
            raise SpecError(f"tensor '{tensor.name}' is {tensor.dtype}, which the {backend.name} "
                            f"backend of target '{target.name}' cannot hold; use one of "
                            f"{', '.join(backend.ctypes)}", tensor.loc)


def plan_graph(graph, target, tune: bool = True) -> ModelPlan:
    """The plan of an (optimized) graph for `target`; `tune=False` leaves the tuned calls for
    `ait-build profile` (codegen/tuning.py)."""
    backend = get_backend(target.backend)
    check_dtype(graph, target, backend)
    return plan_model(graph, target, backend, target_profile(target) if tune else None)


def target_profile(target) -> Profile:
    """The profile a build of `target` reads (the project's first), with where a manifest names
    it from and where `ait-build profile` writes."""
    path = profile_path(target)
    return Profile(path, load_profile(target), profile_root(target, path),
                   project_profile_path(target))


def build_plan(spec_path: str, target, weights: str | None = None,
               optimize: bool = True, tune: bool = True) -> ModelPlan:
    """`optimize=False` plans the graph as written (every op its own kernel), for tests."""
    target = resolve_target(target)
    graph = load_model(spec_path, weights)
    if optimize:
        graph, _ = run_passes(graph, target)
    return plan_graph(graph, target, tune)


def plan_outputs(spec_path: str, target, weights: str | None = None,
                 optimize: bool = True) -> Emission:
    """The files emit() would write, without rendering anything (for SCons emitters)."""
    return emission(build_plan(spec_path, target, weights, optimize))


def emit(spec_path: str, target, out_dir: str, weights: str | None = None,
         optimize: bool = True, launcher: dict | None = None) -> Emission:
    """Renders every file of the model library into out_dir (only changed files are written);
    `launcher`: the manifest's record of the compiler launcher the build runs through."""
    target = resolve_target(target)
    plan = build_plan(spec_path, target, weights, optimize)
    return write_library(plan, out_dir, toolchain_for(target).manifest(), launcher)


def summarize(graph, target) -> dict:
    """Unique kernels and planned workspace of an optimized graph, for `ait-build graph
    --target`."""
    try:
        plan = plan_graph(graph, target)
    except AitError as exc:
        return {"kernels": f"not planned: {exc}"}
    return {"kernels": len(plan.kernels), "kernel_calls": len(plan.steps),
            "workspace_bytes": plan.workspace_bytes(),
            "workspace_bytes_opt": plan.workspace_bytes("opt")}
