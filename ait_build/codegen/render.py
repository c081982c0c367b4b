"""The Jinja2 environment every source is rendered with: templates are files under templates/
(ait-build's own: resources.data_dir), undefined names are errors, and contexts are flat. A file
without the .j2 suffix (the plain C++ headers under templates/<backend>/include/) is no template:
it is copied as it is. `template_deps` lists the files a render reads (the template and
everything it extends or includes), for SCons dependencies."""

from __future__ import annotations

import functools
import json
import os
import re

import jinja2
from jinja2 import meta

from ait_build.ir.resources import data_dir


def templates_dir() -> str:
    return data_dir("templates")


def template_path(dep: str) -> str:
    """The file of a 'templates/...' path as template_deps names it."""
    return os.path.join(templates_dir(), *dep.split("/")[1:])


def c_string(value) -> str:
    """A C string literal (JSON's escapes are valid C escapes for printable ASCII)."""
    text = json.dumps(str(value), ensure_ascii=True)
    return text.replace("?", "\\?")  # no trigraphs


def c_comment(value) -> str:
    """Text safe inside a // or a /* */ comment: no line breaks, no line-continuing backslashes,
    and no `*/` or `/*` to end or nest a comment."""
    text = " ".join(str(value).replace("\\", "/").split())
    while "*/" in text or "/*" in text:
        text = text.replace("*/", "* /").replace("/*", "/ *")
    return text


def cute_ints(text) -> str:
    """'128, 256, 64' -> '_128, _256, _64': CuTe's static integers, for tile shapes."""
    return ", ".join(f"_{int(v)}" for v in str(text).split(","))


# C++ math whose vector loops are long polynomials (exp, erf, tanh and the activations built on
# them, but not the clamps hardsigmoid and hardtanh; sin, cos, log): `{% if expr is slow_math %}`
# in a template
SLOW_MATH = re.compile(r"(?<![Hh]ard)(exp|erf|gelu|silu|sigmoid|tanh)|sinf|cosf|logf")


def slow_math(text) -> bool:
    return SLOW_MATH.search(str(text)) is not None


@functools.lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates_dir()),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True, autoescape=False)
    env.filters["cstr"] = c_string
    env.filters["comment"] = c_comment
    env.filters["cute_ints"] = cute_ints
    env.tests["slow_math"] = slow_math
    return env


def is_template(name: str) -> bool:
    return name.endswith(".j2")


def render(template: str, context: dict) -> str:
    if not is_template(template):
        with open(template_path(f"templates/{template}"), encoding="utf-8") as fh:
            return fh.read()
    return environment().get_template(template).render(**context)


@functools.lru_cache(maxsize=None)
def template_deps(template: str) -> tuple:
    """The template and every template it extends or includes, as 'templates/...' paths."""
    if not is_template(template):
        return (f"templates/{template}",)
    env = environment()
    seen, todo = [], [template]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        source = env.loader.get_source(env, name)[0]
        todo.extend(t for t in meta.find_referenced_templates(env.parse(source)) if t)
    return tuple(sorted(f"templates/{name}" for name in seen))
