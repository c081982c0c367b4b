"""A stand-in for ait_build.codegen.emit and ait_build.toolchain with the same contract, so the
SCons glue is tested on its own: one tiny C++ file per unique (op, attrs), a model file with the
C API that returns its input's first element, the header, manifest and weights. A test project's
site_scons/site_init.py installs it (see conftest.make_project)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field

import jinja2

from ait_build.errors import AitError
from ait_build.spec.model import load_model


@dataclass
class Emission:
    name: str
    files: list
    kernel_sources: list
    model_source: str = "src/model.cpp"
    header: str = ""
    manifest: str = "manifest.json"
    weights: str = "weights.safetensors"
    template_deps: dict = field(default_factory=dict)


def _templates():
    return os.path.join(os.getcwd(), "templates")


def _kernels(graph):
    found = {}
    for node in graph.nodes:
        attrs = json.dumps({k: v for k, v in node.attrs.items() if not k.startswith("_")},
                           sort_keys=True, default=str)
        key = hashlib.sha256(f"{node.op}{attrs}".encode()).hexdigest()[:8]
        found[f"{node.op}_{key}"] = (node.op, attrs)
    return dict(sorted(found.items()))


def _template_for(op):
    return f"cpu/{op}.cpp.j2" if os.path.isfile(os.path.join(_templates(), "cpu", f"{op}.cpp.j2")) \
        else "cpu/kernel.cpp.j2"


def plan_outputs(spec_path, target, weights=None):
    graph = load_model(spec_path, weights)
    kernels = _kernels(graph)
    sources = [f"src/{k}.cpp" for k in kernels]
    deps = {f"src/{k}.cpp": ["templates/" + _template_for(op)] for k, (op, _) in kernels.items()}
    deps["src/model.cpp"] = ["templates/common/model.cpp.j2"]
    files = sorted(sources + ["src/model.cpp", f"{graph.name}.h", "manifest.json", "weights.safetensors"])
    return Emission(name=graph.name, files=files, kernel_sources=sources, header=f"{graph.name}.h",
                    template_deps=deps)


def _write(path, data: bytes):
    if os.path.isfile(path):
        with open(path, "rb") as fh:
            if fh.read() == data:
                return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def emit(spec_path, target, out_dir, weights=None):
    emission = plan_outputs(spec_path, target, weights)
    graph = load_model(spec_path, weights)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_templates()), undefined=jinja2.StrictUndefined)
    for name, (op, attrs) in _kernels(graph).items():
        text = env.get_template(_template_for(op)).render(name=name, op=op, attrs=attrs)
        _write(os.path.join(out_dir, "src", name + ".cpp"), text.encode())
    text = env.get_template("common/model.cpp.j2").render(name=graph.name, kernels=list(_kernels(graph)))
    _write(os.path.join(out_dir, "src", "model.cpp"), text.encode())
    _write(os.path.join(out_dir, emission.header), f"// {graph.name}\n".encode())
    manifest = {"name": graph.name, "target": target.name, "inputs": graph.inputs}
    _write(os.path.join(out_dir, "manifest.json"), json.dumps(manifest, sort_keys=True).encode())
    _write(os.path.join(out_dir, "weights.safetensors"), b"weights of " + graph.name.encode())
    return emission


@dataclass(frozen=True)
class Toolchain:
    cxx: str
    flags: tuple
    include_dirs: tuple = ()
    defines: tuple = ()
    link_flags: tuple = ()
    libs: tuple = ()
    lib_dirs: tuple = ()
    rpath: tuple = ()


def toolchain_for(target, check=True):
    if check and not shutil.which(target.cxx):
        raise AitError(f"target '{target.name}' needs the C++ compiler '{target.cxx}', which is not "
                       "installed: install g++ (apt-get install g++)")
    return Toolchain(cxx=target.cxx, flags=tuple(target.flags), link_flags=tuple(target.link_flags))
