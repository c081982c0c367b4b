"""SCons glue behind the SConstruct: variables, the generation builder, scanners, compile and
link rules and CacheDir (progress lines: progress.py).

Per model and target the build is: spec --generate (emit())--> build/<target>/<model>/{src/*.cpp,
<model>.h, manifest.json, weights.safetensors} --compile per source--> obj/*.os --link-->
lib<model>.so --digest--> lib<model>.so.sha256. Content signatures everywhere, so re-emitting
identical bytes rebuilds nothing; outputs are checked against the signatures recorded for them
(integrity.py). Paths and flags never pass through SCons' `$` substitution or a shell:
files are handed over as nodes, commands as argument lists (commands.py).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass

import SCons.Node.FS
import SCons.Scanner
import SCons.SConsign
from SCons.Script import Builder, Default, Dir, Environment, Exit, GetOption, Help, SetOption
from SCons.Script import Alias, Variables

import ait_build
from ait_build.backends import get_backend, toolchain_for
from ait_build.build import commands, integrity, runtime_files
from ait_build.build.cache import cache_folder
from ait_build.build.invoke import resolve_spec
from ait_build.build.commands import literal
from ait_build.build.launcher import Launcher, find_launcher
from ait_build.build.lock import hold_build_lock
from ait_build.build.progress import Progress
from ait_build.build.spec_list import split_paths
from ait_build.codegen.render import template_path, templates_dir
from ait_build.errors import AitError, SpecError, did_you_mean
from ait_build.files.read import sha256_file
from ait_build.pipeline import emit, find_target, plan_outputs
from ait_build.spec.target import known_targets
from ait_build.spec.yamlfile import load_yaml

VARIABLES = (
    ("target", "target name(s) from targets/*.yaml, comma separated", "cpu"),
    ("model", "model name(s) from specs/*.yaml, comma separated, or 'all'", "all"),
    ("spec", "spec file path(s), comma separated, '\\,' for a comma in a path (instead of "
             "model=)", ""),
    ("cache", "CacheDir shared by models and checkouts (default: $AIT_BUILD_CACHE, else "
              "build/cache; off for none)", ""),
    ("cache_readonly", "1: read the cache but never write to it (CI on pull requests)", "0"),
    ("launcher", "compiler launcher each compile runs through: sccache (default: none; never "
                 "picked up by itself)", ""),
    ("verbose", "1: print full command lines instead of one line per step", "0"),
)
# Folders and files of ait_build/ whose code does not shape the generated sources (they are not
# hashed into generation)
NOT_CODEGEN = ("runtime", "cli", "bench", "profile")
JINJA_REF = re.compile(r"{%-?\s*(?:include|import|from|extends)\s+['\"]([^'\"]+)['\"]")


@dataclass
class Options:
    root: str
    targets: list
    specs: list  # spec file paths
    cache: str
    cache_readonly: bool
    verbose: bool
    launcher: Launcher | None = None


def setup(arguments: dict) -> None:
    """Entry point of the SConstruct: declares every node for the selected targets and models."""
    root = Dir("#").abspath
    try:
        opts = parse_options(dict(arguments), root)
        if GetOption("help"):
            return  # the variables, targets and models are all `scons -h` shows
        targets = {t: find_target(t, os.path.join(root, "targets")) for t in opts.targets}
        if not GetOption("no_exec"):
            hold_build_lock(os.path.join(root, "build"))
        env = base_env(opts, {t.backend for t in targets.values()})
        progress = Progress()
        env["PRINT_CMD_LINE_FUNC"] = progress
        outputs = []
        for tname, target in targets.items():
            tenv = target_env(env, target, root)
            claimed: dict = {}  # model name -> the spec that builds it
            for spec in opts.specs:
                nodes, steps = model_rules(tenv, spec, tname, target, root, claimed)
                outputs += nodes
                for node in steps:
                    progress.add_step(tenv, node)
    except AitError as exc:
        text = str(exc)
        print(text if ": error: " in text else f"scons: error: {text}", file=sys.stderr)
        Exit(2)
    Default(outputs)


# -- variables ------------------------------------------------------------------------------------
def known_models(root: str) -> list:
    return sorted(os.path.splitext(os.path.basename(p))[0]
                  for p in glob.glob(os.path.join(root, "specs", "*.yaml")))


def parse_options(args: dict, root: str) -> Options:
    """Validated variables; an unknown variable, target or model raises AitError listing the valid
    ones (SCons would otherwise ignore a typo such as `traget=a100`)."""
    names = [v[0] for v in VARIABLES]
    targets_known = known_targets(os.path.join(root, "targets"))
    models_known = known_models(root)
    variables = Variables(None, {})  # help shows the defaults: SCons substitutes given values
    for name, help_text, default in VARIABLES:
        variables.Add(name, help_text, default)
    Help(variables.GenerateHelpText(Environment(tools=[], variables=variables))
         + f"\nknown targets: {', '.join(targets_known)}\nknown models: {', '.join(models_known)}\n",
         append=True)
    for key in sorted(args):
        if key not in names:
            raise AitError(f"unknown variable '{key}'" + did_you_mean(key, names)
                           + f"; variables: {', '.join(names)}")
    get = lambda key: str(args.get(key, dict((v[0], v[2]) for v in VARIABLES)[key])).strip()
    targets = _split(get("target"))
    for name in targets:
        if name not in targets_known:
            raise AitError(f"unknown target '{name}'" + did_you_mean(name, targets_known)
                           + f"; known targets: {', '.join(targets_known)}")
    specs = [os.path.abspath(p) for p in split_paths(str(args.get("spec", "")))]
    for path in specs:
        resolve_spec(path, root)  # one that is missing or not a file says which
    if not specs:
        models = models_known if get("model") == "all" else _split(get("model"))
        for name in models:
            if name not in models_known:
                raise AitError(f"unknown model '{name}'" + did_you_mean(name, models_known)
                               + f"; known models: {', '.join(models_known) or 'none'}, or all")
        specs = [os.path.join(root, "specs", m + ".yaml") for m in models]
    specs = list(dict.fromkeys(specs))  # a model named twice is built once, not two clashing
    if not targets or not specs:
        raise AitError("nothing to build: give target= and model= (see scons -h)")
    cache, given = cache_folder(args, root)
    # SCons' own --cache-readonly too: SCons sets its flag only after the SConstruct has made
    # the cache, which must not take a lock in a read-only folder
    readonly = _flag(get("cache_readonly"), "cache_readonly") or bool(GetOption("cache_readonly"))
    if cache:
        _check_cache_dir(cache, given, readonly)
    return Options(root=root, targets=targets, specs=specs, cache=cache,
                   cache_readonly=readonly, verbose=_flag(get("verbose"), "verbose"),
                   launcher=find_launcher(get("launcher")))


def _split(text: str) -> list:
    return [part.strip() for part in text.split(",") if part.strip()]


def _check_cache_dir(path: str, given: str, readonly: bool) -> None:
    """A cache folder that exists as a folder or can be made (SCons would fail with a traceback);
    a read-only cache is never made (a missing one has nothing to read)."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise AitError(f"{given} '{path}' is not a directory")
    if readonly:
        return
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise AitError(f"{given} '{path}': cannot create the cache folder: {exc.strerror}") from None


def _flag(text: str, name: str) -> bool:
    if text.lower() in ("1", "yes", "true", "on"):
        return True
    if text.lower() in ("0", "no", "false", "off", ""):
        return False
    raise AitError(f"{name}= takes 0 or 1, got '{text}'")


# -- environments ---------------------------------------------------------------------------------
def base_env(opts: Options, backends: set):
    """The environment every target's clones share; `backends` (of the selected targets) size
    the default number of parallel jobs."""
    # The user's PATH reaches compilers such as nvcc; the target file still names the compiler.
    # A launcher also gets the variables that say where its cache is.
    env = Environment(tools=[], ENV={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    if opts.launcher:
        env["ENV"] = opts.launcher.environ(env["ENV"])
    env["AIT_LAUNCHER"] = opts.launcher
    env.Decider(integrity.decide)
    os.makedirs(os.path.join(opts.root, "build"), exist_ok=True)
    signature_file(os.path.join(opts.root, "build", ".sconsign"))
    if not _jobs_given():
        jobs, why = default_jobs(backends, os.cpu_count() or 1, available_memory())
        SetOption("num_jobs", jobs)
        if why:
            print(f"ait-build: {why}")
    if opts.cache:
        integrity.use_cache(env, os.path.abspath(opts.cache), opts.cache_readonly)
    env["AIT_VERBOSE"] = opts.verbose
    commands.add_builders(env)
    integrity.add_builders(env)
    runtime_files.add_builders(env)
    env.Append(BUILDERS={"AitGenerate": Builder(
        action=env.Action(generate_action, generate_message), emitter=generate_emitter,
        source_scanner=SCons.Scanner.ScannerBase(scan_sources, name="ait-sources", recursive=True))})
    return env


def signature_file(path: str) -> None:
    """SCons' signature database at `path`. Not through env.SConsignFile, which substitutes the
    path (and makes its folder through a substituted Mkdir): no escape keeps a `$(` in a
    project's path through SCons' substitution, which drops `$(` and `$)` from command text."""
    SCons.SConsign.File(os.path.normpath(path))


def default_jobs(backends: set, cpus: int, available: int | None) -> tuple:
    """(parallel jobs, a note when memory rather than the cores set them): one job per core, but
    no more than the available memory holds at the hungriest backend's per-job peak
    (Backend.compile_job_memory)."""
    if available is None:
        return cpus, ""
    per_job = max(get_backend(b).compile_job_memory for b in backends or {"cpu"})
    fits = max(1, available // per_job)
    if fits >= cpus:
        return cpus, ""
    return fits, (f"{fits} parallel compile jobs, not {cpus}: {available / (1 << 30):.1f} GiB of "
                  f"memory available, about {per_job >> 30} GiB per job (-j N overrides)")


def available_memory(meminfo: str = "/proc/meminfo") -> int | None:
    """MemAvailable in bytes, or None where the kernel does not say (not Linux)."""
    try:
        with open(meminfo, encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _jobs_given() -> bool:
    words = sys.argv[1:] + os.environ.get("SCONSFLAGS", "").split()
    return any(w == "-j" or w.startswith(("-j", "--jobs")) for w in words) or GetOption("num_jobs") > 1


def target_env(env, target, root: str):
    """A clone with the target's toolchain (toolchain.py), whose command lines the compile and
    link steps run; the include and library folders are there for SCons' scanners."""
    tc = toolchain_for(target)  # raises AitError naming what to install
    return env.Clone(AIT_TOOLCHAIN=tc, AIT_ROOT=root, ENV=tc.environ(env["ENV"]),
                     CPPPATH=[env.fs.Dir(d) for d in tc.include_dirs],
                     LIBPATH=[env.fs.Dir(d) for d in tc.lib_dirs],
                     LIBS=[literal(lib) for lib in tc.libs],
                     AIT_OBJ_SUFFIX=tc.object_suffix)


# -- one model for one target ---------------------------------------------------------------------
_PLANS: dict = {}


def plan(spec: str, target):
    """Emission planned for (spec, target), computed once per SCons run."""
    key = (spec, target.digest())
    if key not in _PLANS:
        _PLANS[key] = plan_outputs(spec, target)
    return _PLANS[key]


def model_rules(env, spec: str, tname: str, target, root: str, claimed: dict) -> tuple:
    """Declares generate -> compile -> link -> digest for one model; returns (output nodes, one
    target node per printed step: the digest prints no line). Outputs go to build/<tname>/<model>,
    with tname the target as the user named it; `claimed` (model name -> spec) refuses two specs
    that name one model."""
    emission = plan(spec, target)
    if emission.name in claimed:
        raise AitError(f"specs {claimed[emission.name]} and {spec} both name model "
                       f"'{emission.name}' (build/{tname}/{emission.name}); rename one")
    claimed[emission.name] = spec
    out = os.path.join(root, "build", tname, emission.name)
    label = f"{tname}/{emission.name}"
    if emission.tuning:  # once per build and model: calls the profile does not cover
        print(f"ait-build: {label}: {emission.tuning}")
    for note in (emission.plain, emission.unfused):  # plain fallback kernels, unfused attention
        if note:
            print(f"ait-build: {label}: {note}")
    genv = env.Clone(AIT_SPEC=spec, AIT_TARGET=target, AIT_LABEL=label,
                     AIT_TEMPLATES=templates_dir())
    file = env.fs.File  # nodes, not strings: SCons would substitute `$` in a string path
    generated = genv.AitGenerate(target=file(os.path.join(out, emission.manifest)),
                                 source=file(spec))
    genv.Precious(generated)  # emit() leaves unchanged files alone; SCons must not delete them
    by_path = {str(node.abspath): node for node in generated}
    objects = []
    backend = get_backend(target.backend)
    pch = {}  # kernels begin with one header: precompiled once per target (precompiled.py)
    if backend.precompiled_header:
        pch["AIT_PRECOMPILED"] = (backend.precompiled_header, backend.support_files,
                                  os.path.join(root, "build", tname, ".pch"))
    for src in sorted(emission.compiled_sources):
        obj = file(os.path.join(out, "obj", _stem(src) + env["AIT_OBJ_SUFFIX"]))
        kernel = src in emission.kernel_sources
        obj = genv.AitCompile(target=obj, source=by_path[os.path.join(out, src)],
                              **(pch if kernel else {}))[0]
        objects.append(obj)
        if kernel:
            _after_same_kernel(genv, tname, src, obj)
    library = genv.AitLink(target=file(os.path.join(out, f"lib{emission.name}.so")), source=objects)
    digest = genv.AitDigest(target=file(os.path.join(out, f"lib{emission.name}.so.sha256")),
                            source=library)
    # a new compiler or library version rebuilds (and misses the cache): the manifest says so
    genv.Depends(list(generated) + objects + list(library), toolchain_value(genv))
    carried = runtime_files.carry_rules(genv, out, os.path.join(root, "build", tname, ".runtime"))
    nodes = list(generated) + list(library) + list(digest) + carried
    Alias(literal(emission.name), nodes)
    Alias(literal(label), nodes)
    return nodes, [generated[0]] + objects + [library[0]]


_KERNEL_OBJECTS: dict = {}  # (target name, kernel source name) -> its first object this run


def _after_same_kernel(env, tname: str, src: str, obj) -> None:
    """Compiles a kernel another model of this build also has (the same name: a hash of what it
    renders) after that one, so it is retrieved from the cache rather than compiled twice in
    parallel; an order only, not an input."""
    first = _KERNEL_OBJECTS.setdefault((tname, os.path.basename(src)), obj)
    if first is not obj:
        env.Requires(obj, first)


def toolchain_value(env):
    """A Value node of what the manifest records of the environment's toolchain: compiler and
    host compiler versions, library versions (the flags are in the command lines already)."""
    versions = env["AIT_TOOLCHAIN"].manifest()
    versions.pop("flags")
    return env.Value(f"toolchain {json.dumps(versions, sort_keys=True)}")


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def generate_emitter(target, source, env):
    emission = plan(env["AIT_SPEC"], env["AIT_TARGET"])
    out = os.path.dirname(target[0].abspath)
    templates = sorted({t for deps in emission.template_deps.values() for t in deps})
    targets = [env.fs.File(os.path.join(out, f)) for f in emission.files]
    extra = [env.fs.File(template_path(t)) for t in templates]
    # Values print as themselves in --debug=explain, so they say what they are.
    values = [env.Value(f"target {env['AIT_TARGET'].name} {env['AIT_TARGET'].digest()}"),
              env.Value(f"ait_build sources {package_digest()}"),
              env.Value(f"profile {file_digest(emission.profile)}")]
    if env["AIT_LAUNCHER"]:  # the manifest names it; a build without one keeps its signature
        values.append(env.Value(f"launcher {json.dumps(env['AIT_LAUNCHER'].manifest())}"))
    return targets, list(source) + extra + values


def generate_action(target, source, env):
    out = os.path.dirname(target[0].abspath)
    planned = plan(env["AIT_SPEC"], env["AIT_TARGET"])
    try:
        launcher = env["AIT_LAUNCHER"]
        done = emit(env["AIT_SPEC"], env["AIT_TARGET"], out,
                    launcher=launcher.manifest() if launcher else None)
    except AitError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    except Exception as exc:  # a bug in ait-build: say so in one line, as the CLI does
        if os.environ.get("AIT_BUILD_DEBUG"):
            raise
        sys.stderr.write(f"internal error generating {env['AIT_LABEL']}: {type(exc).__name__}: "
                         f"{exc} (set AIT_BUILD_DEBUG=1 for the traceback, and please report it)\n")
        return 1
    if list(done.files) != list(planned.files):
        sys.stderr.write(f"internal error: emit() wrote {list(done.files)} but plan_outputs() "
                         f"promised {list(planned.files)}\n")
        return 1
    return 0


def generate_message(target, source, env):
    return f"generating {len(target)} files ({env['AIT_LABEL']})"


# -- scanners and hashes --------------------------------------------------------------------------
def scan_sources(node, env, path):
    """Spec files -> included block files and a weights file; templates -> the templates they
    `{% include %}`/`{% import %}`/`{% extends %}`. Recursion follows the found files."""
    if not isinstance(node, SCons.Node.FS.File) or not node.exists():
        return []
    name = node.abspath
    if name.endswith((".yaml", ".yml")):
        found = spec_references(name)
    elif name.endswith(".j2"):
        text = node.get_text_contents()
        found = [os.path.join(env["AIT_TEMPLATES"], ref) for ref in JINJA_REF.findall(text)]
    else:
        found = []
    return [env.fs.File(path) for path in found]


def spec_references(path: str) -> list:
    """Files a spec or block file reads: `include:` entries and a `weights:` file, by path."""
    try:
        doc = load_yaml(path)  # bounded: size, nodes and depth are checked as it parses
    except SpecError:
        return []  # the loader reports it, with a location
    here = os.path.dirname(path)
    refs = doc.get("include") or []
    refs = [refs] if isinstance(refs, str) else [r for r in refs if isinstance(r, str)]
    weights = doc.get("weights")
    if isinstance(weights, dict):
        weights = weights.get("file")
    if isinstance(weights, str):
        refs.append(weights)
    found = [os.path.normpath(os.path.join(here, r)) for r in refs]
    return [p for p in found if os.path.isfile(p)]


def file_digest(path: str) -> str:
    """Hash of a file's bytes ('none' when there is none): the kernel profile is read by
    generation, and creating, editing or deleting it must regenerate."""
    try:
        return sha256_file(path)[:16]
    except (OSError, TypeError):
        return "none"


def package_digest() -> str:
    """Hash of the ait_build sources that shape generated code (a Value node of generation), so a
    new compiler pass regenerates sources; runtime and CLI modules are left out."""
    pkg = os.path.dirname(os.path.abspath(ait_build.__file__))
    h = hashlib.sha256(getattr(ait_build, "__version__", "").encode())
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fname in sorted(filenames):
            path = os.path.join(dirpath, fname)
            rel = os.path.relpath(path, pkg).replace(os.sep, "/")
            if not fname.endswith(".py") or rel in NOT_CODEGEN or rel.split("/")[0] in NOT_CODEGEN:
                continue
            with open(path, "rb") as fh:
                h.update(rel.encode() + b"\0" + fh.read() + b"\0")
    return h.hexdigest()[:16]
