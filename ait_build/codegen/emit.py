"""A planned model -> the generated files of its library.

`emission` says which files a build will have (nothing rendered, no weight values computed), for
SCons emitters. `write_library` renders them into a folder and rewrites a file only when its
bytes change, so timestamps and SCons signatures stay put for unchanged kernels. Loading the spec,
the passes and the plan come before (ait_build/pipeline.py).

Layout of the folder:
    <name>.h              the C API
    manifest.json         inputs, outputs, dims, kernels with source hashes, the other sources'
                          hashes, compiler, weights hash, and build_id: the hash of all of that,
                          which the library also returns
    weights.safetensors   folded weights in the layout the kernels read
    src/model.cpp         owns workspace and weights, calls the kernels in order
    src/build_id.cpp      build_id(): the manifest's build_id (its own file, so that a changed
                          kernel recompiles this one line, not model.cpp)
    src/<kernel>.cpp      one per unique kernel, named from its signature
    src/ait_*.h           support headers shared by those sources
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

from ait_build import __version__
from ait_build.codegen import weights_file
from ait_build.codegen.cexpr import cexpr
from ait_build.codegen.plan import ModelPlan, weight_arrays
from ait_build.codegen.render import c_comment, render, template_deps
from ait_build.codegen.digest import json_sha256
from ait_build.errors import AitError
from ait_build.files.read import read_bytes, sha256_file
from ait_build.ir.dims import Dim, shape_str

MODEL_SOURCE = "src/model.cpp"
ID_SOURCE = "src/build_id.cpp"
ID_TEMPLATE = "common/build_id.cpp.j2"
MANIFEST = "manifest.json"
WEIGHTS = "weights.safetensors"
HEADER_TEMPLATE = "common/model.h.j2"


@dataclass(frozen=True)
class Emission:
    name: str
    files: list  # every relative path emit() writes, sorted
    kernel_sources: list  # src/<kernel>.cpp, one per unique kernel, sorted
    model_source: str
    header: str
    manifest: str
    weights: str
    template_deps: dict  # relative path -> ['templates/...'] it is rendered from
    support_headers: list = field(default_factory=list)
    tuning: str = ""  # one line when calls lack a profile entry (codegen/tuning.py), else ''
    profile: str = ""  # the profile file the kernel choices came from
    plain: str = ""  # one line when calls run plain fallback kernels (ModelPlan.plain), else ''
    unfused: str = ""  # one line when attention-like softmaxes stay written out, else ''
    id_source: str = ID_SOURCE

    @property
    def compiled_sources(self) -> list:
        """Every source a library is compiled from: the kernels, the model and the build id."""
        return sorted(self.kernel_sources + [self.model_source, self.id_source])


def emission(plan: ModelPlan) -> Emission:
    header = f"{plan.name}.h"
    kernels = plan.unique_kernels()
    deps = {k.source: list(template_deps(k.template)) for k in kernels}
    deps[MODEL_SOURCE] = list(template_deps(plan.backend.model_template))
    deps[header] = list(template_deps(HEADER_TEMPLATE))
    deps[ID_SOURCE] = list(template_deps(ID_TEMPLATE))
    for path, template in plan.backend.support_files.items():
        deps[path] = list(template_deps(template))
    support = sorted(plan.backend.support_files)
    sources = sorted(k.source for k in kernels)
    files = sorted(set(sources) | set(support) | {MODEL_SOURCE, ID_SOURCE, header, MANIFEST,
                                                   WEIGHTS})
    report = plan.tuning
    return Emission(name=plan.name, files=files, kernel_sources=sources, model_source=MODEL_SOURCE,
                    header=header, manifest=MANIFEST, weights=WEIGHTS,
                    template_deps=dict(sorted(deps.items())), support_headers=support,
                    tuning=report.summary() if report else "",
                    profile=report.profile if report else "", plain=plain_summary(plan.plain),
                    unfused=unfused_attention(plan))


def plain_summary(plain: list, shown: int = 3) -> str:
    """One line naming the calls on plain fallback kernels (the first few, with why)."""
    if not plain:
        return ""
    return (f"{len(plain)} GEMM/conv calls run plain kernels without tensor or matrix cores, "
            f"far slower: {_first(plain, shown, lambda call: f'{call[0]} ({call[1]})')}")


def _first(items: list, shown: int, text=str) -> str:
    """The first `shown` items, and how many more."""
    more = f"; {len(items) - shown} more" if len(items) > shown else ""
    return "; ".join(text(item) for item in items[:shown]) + more


# how far back from a softmax a scores matmul is looked for (scales, biases, masks, views)
SCORES_DEPTH = 8


def unfused_attention(plan: ModelPlan, shown: int = 3) -> str:
    """One line naming the softmaxes over matmul scores that a target fusing attention left
    written out (a form fuse_attention does not know: the scores go through memory), else ''."""
    if not plan.target.cap("fused_attention"):
        return ""
    made = {t: n for n in plan.graph.nodes for t in n.outputs}
    left = [n.name for n in plan.graph.nodes if n.op == "softmax" and _reads_matmul(made, n)]
    if not left:
        return ""
    return (f"{len(left)} softmaxes over matmul scores are not fused into attention (a form the "
            f"attention fusion does not know; their scores go through memory): "
            f"{_first(left, shown)}")


def _reads_matmul(made: dict, node) -> bool:
    """Whether a matmul is at most SCORES_DEPTH steps before `node`."""
    frontier = list(node.inputs)
    for _ in range(SCORES_DEPTH):
        producers = [made[t] for t in frontier if t in made]
        if any(p.op in ("matmul", "bmm") for p in producers):
            return True
        frontier = [t for p in producers for t in p.inputs]
    return False


def _io(plan: ModelPlan, names) -> list:
    return [{"name": i.name, "dtype": i.dtype, "shape": [d.to_json() for d in i.shape]}
            for i in plan.io(names)]


def _shape_text(shape) -> str:
    return "[" + ", ".join(str(d.to_json()) for d in shape) + "]"


def render_kernel(kernel, backend) -> str:
    """A kernel's source: its template with its context and the backend's render globals (the
    GPU layer's templates ask which kernel header to include)."""
    return render(kernel.template, {**backend.render_globals, **kernel.render_context()})


def render_kernels(plan: ModelPlan) -> dict:
    """relative path -> text of every kernel source and support header."""
    out = {k.source: render_kernel(k, plan.backend) for k in plan.unique_kernels()}
    for path, template in plan.backend.support_files.items():
        out[path] = render(template, {})
    return out


def _model_names(plan: ModelPlan) -> dict:
    """What the header, model and build id templates share: names, dims, inputs and outputs."""
    ios = {"inputs": [dict(name=i.name, dtype=i.dtype, shape=_shape_text(i.shape))
                      for i in plan.io(plan.graph.inputs)],
           "outputs": [dict(name=o.name, dtype=o.dtype, shape=_shape_text(o.shape))
                       for o in plan.io(plan.graph.outputs)]}
    dims = [dict(name=d.name, min=d.min, max=d.max) for d in plan.dims]
    return dict(model=plan.name, target=plan.target.name, cname=plan.cname,
                CNAME=plan.cname.upper(), dims=dims, header=f"{plan.name}.h", **ios)


def size_checks(plan: ModelPlan) -> list:
    """The tensor sizes that fall below 0 at some dims in their ranges (a slice to `seq - 4`):
    run() refuses such dims with ERROR_SHAPE, as the Python runtime refuses an output of a
    negative size, instead of running kernels on negative sizes. One per distinct size, naming
    the first tensor that has it."""
    found = {}
    for t in plan.graph.tensors.values():
        for d in map(Dim.of, t.shape):
            if d.may_be_negative:
                found.setdefault(d, f"tensor '{t.name}' {shape_str(t.shape)}")
    return [dict(expr=cexpr(d), size=str(d), tensor=tensor) for d, tensor in found.items()]


def render_build_id(plan: ModelPlan, build_id: str) -> dict:
    """relative path -> text of the build id source."""
    return {ID_SOURCE: render(ID_TEMPLATE, dict(_model_names(plan), build_id=build_id))}


def render_model(plan: ModelPlan, wl: weights_file.WeightsLayout) -> dict:
    """relative path -> text of the header and the model source (which calls each kernel with
    its configuration: the manifest hashes it, so that a changed choice changes the build_id)."""
    out = {}
    common = _model_names(plan)
    header = common["header"]
    out[header] = render(HEADER_TEMPLATE, dict(common, step_timing=plan.backend.step_timing))
    shared, per_thread = plan.scratch()
    groups = [dict(size=size, start=g.start, end=g.end, tensors=c_comment(", ".join(g.tensors))[:100])
              for g, size in zip(plan.layout.groups, plan.layout.size_exprs())]
    out[MODEL_SOURCE] = render(plan.backend.model_template, dict(
        common, kernels=[dict(name=k.name, params=k.params)
                                        for k in plan.unique_kernels()],
        header_len=len(wl.header), header_hash=wl.header_hash, data_len=wl.data_len,
        arena_bytes=wl.arena_bytes,
        weights=[dict(key=e.key, var=e.var, ctype=e.ctype, file_offset=e.file_offset,
                      nbytes=e.nbytes, arena_offset=e.arena_offset) for e in wl.entries],
        scratch_shared=shared, scratch_thread=per_thread, groups=groups, sizes=size_checks(plan),
        cuda_graphs=bool(plan.target.cap("cuda_graphs")),
        dependent_launch_max_bytes=int(plan.target.cap("dependent_launch_max_mb")) << 20,
        values=[dict(tensor=c_comment(v.tensor), var=v.var, ctype=v.ctype, init=v.init,
                     const=v.const) for v in plan.values.values()],
        steps=[dict(comment=c_comment(f"{s.node or 'io'}: {s.kernel.label}"), kernel=s.kernel.name,
                    args=", ".join(s.args)) for s in plan.steps]))
    return out


def weights_layout(plan: ModelPlan) -> weights_file.WeightsLayout:
    return weights_file.layout(plan.weights, {"format": "ait-build", "model": plan.name,
                                              "backend": plan.target.backend}, plan.ctypes)


def manifest(plan: ModelPlan, sources: dict, weights_bytes: bytes, compiler: dict) -> dict:
    """`compiler`: what the toolchain records (toolchain.Toolchain.manifest())."""
    kernels = [{"name": k.name, "op": k.op, "source": k.source,
                "sha256": hashlib.sha256(sources[k.source].encode()).hexdigest()}
               for k in plan.unique_kernels()]
    # the other generated sources (model source, header, support headers) by hash: a build that
    # differs only there (a call's configuration, a header's code) gets another build_id
    kernel_sources = {k["source"] for k in kernels}
    others = {path: hashlib.sha256(text.encode()).hexdigest()
              for path, text in sorted(sources.items()) if path not in kernel_sources}
    return {
        "name": plan.name,
        "c_name": plan.cname,
        "target": plan.target.name,
        "backend": plan.target.backend,
        "device": plan.backend.device,
        "dtype": plan.graph.dtype,
        "compute_dtype": plan.backend.compute_dtype,
        "dims": [{"name": d.name, "min": d.min, "max": d.max, "opt": d.opt} for d in plan.dims],
        "inputs": _io(plan, plan.graph.inputs),
        "outputs": _io(plan, plan.graph.outputs),
        "kernels": kernels,
        "sources": others,
        "kernel_calls": len(plan.steps),
        "steps": [{"node": s.node, "kernel": s.kernel.name} for s in plan.steps],
        "workspace_bytes": plan.workspace_bytes(),
        "workspace_bytes_opt": plan.workspace_bytes("opt"),
        "memory_plan": "optimizer" if plan.graph.memory_plan is not None else "lifetimes",
        "weights": {"file": WEIGHTS, "sha256": hashlib.sha256(weights_bytes).hexdigest(),
                    "bytes": len(weights_bytes)},
        "compiler": compiler,
        "tuning": _tuning(plan),
        "ait_build_version": __version__,
        "target_file": target_file(plan.target),
    }


def _tuning(plan: ModelPlan) -> dict:
    """Where the GEMM/conv configurations came from: the profile file (relative to its project),
    how many calls it covered, how many borrowed a nearby problem's choice and (where any) how
    many ran the backend's estimate."""
    report = plan.tuning
    if report is None or not report.calls:
        return {"calls": 0}
    root = report.profile_root or os.path.dirname(os.path.dirname(os.path.abspath(
        plan.target.source)))
    profile = os.path.relpath(report.profile, root) if report.profile else ""
    return {"profile": profile, "calls": report.calls, "profiled": report.profiled,
            "nearby": report.nearby, **({"estimated": report.estimated} if report.estimated else {})}


def target_file(target) -> dict:
    """The target file a build read: its name and the sha256 of its bytes (no folder: it differs
    between machines); the resolved target's digest as well."""
    try:
        sha = sha256_file(target.source)
    except (OSError, TypeError):
        sha = "unknown"  # a Target made in code, not read from a file
    return {"name": os.path.basename(str(target.source)), "sha256": sha, "digest": target.digest()}


def write_if_changed(path: str, data: bytes) -> bool:
    """Writes `data` unless the file already holds exactly it. True when written."""
    try:
        if os.path.getsize(path) == len(data) and read_bytes(path) == data:
            return False
    except OSError:
        pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return True


def weights_bytes(plan: ModelPlan, wl=None) -> bytes:
    """The weights file of the plan's library (laid out as `wl`, default weights_layout(plan))."""
    try:
        return weights_file.file_bytes(wl if wl is not None else weights_layout(plan),
                                       weight_arrays(plan))
    except ValueError as exc:
        raise AitError(f"internal: {exc}") from None


def write_library(plan: ModelPlan, out_dir: str, compiler: dict,
                  launcher: dict | None = None) -> Emission:
    """Renders every file of the model library into out_dir (only changed files are written);
    `compiler` is what manifest.json records of the toolchain, `launcher` of the compiler
    launcher (none: no field), which the build_id leaves out as it changes no output."""
    planned = emission(plan)
    wl = weights_layout(plan)
    blob = weights_bytes(plan, wl)
    sources = render_kernels(plan)
    sources.update(render_model(plan, wl))
    record = manifest(plan, sources, blob, compiler)
    record["build_id"] = json_sha256(record)  # what the library returns from build_id()
    sources.update(render_build_id(plan, record["build_id"]))
    if launcher:
        record["launcher"] = launcher
    data = {path: text.encode() for path, text in sources.items()}
    data[WEIGHTS] = blob
    data[MANIFEST] = (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()
    missing = set(planned.files) ^ set(data)
    if missing:
        raise AitError(f"internal: emitted files differ from the plan: {sorted(missing)}")
    for rel in planned.files:
        path = os.path.join(out_dir, rel)
        try:
            write_if_changed(path, data[rel])
        except OSError as exc:  # a read-only or full build folder: the user's to fix
            raise AitError(f"cannot write {path}: {exc.strerror or exc}") from None
    return planned
