"""The bad-spec corpus: every malformed file gets its exact located error, fast, in-process and
through the real CLI; mutated valid specs never leak a Python exception."""

from __future__ import annotations

import os
import re
import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ait_build.errors import AitError, SpecError
from ait_build.pipeline import check_file, load_target
from ait_build.spec.model import load_model
from cli_in_process import run_main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BAD = os.path.join(ROOT, "tests", "bad_specs")
EXPECT = re.compile(r"(?:(?P<path>[^:]+):)?(?P<line>\d+):(?P<col>\d+): (?P<kind>error|note): (?P<text>.+)")
# a blow-up takes minutes; 5 s leaves room for a loaded 2-core machine (repeat_explosion_expr
# expands one instance, 10000 nodes, before the repeat's size is known: about 1 s alone)
TIME_LIMIT_S = 5.0


def _sidecar() -> dict:
    """Expectations of files that cannot carry a comment line (an empty file)."""
    table = {}
    with open(os.path.join(BAD, "expectations.txt"), encoding="utf-8") as fh:
        for line in fh:
            if line.strip() and not line.startswith("#"):
                name, _, expect = line.partition(": ")
                table[name] = [expect.strip()]
    return table


def _cases() -> dict:
    """file name -> ['LINE:COL: error: TEXT', optional notes...] from its `# expect:` lines."""
    cases = _sidecar()
    for name in sorted(os.listdir(BAD)):
        if not name.endswith(".yaml") or name in cases:
            continue
        with open(os.path.join(BAD, name), "rb") as fh:
            head = [line.decode("utf-8", "replace").rstrip("\n") for line in fh.readlines()[:2]]
        expects = [line.split(": ", 1)[1] for line in head if line.startswith(("# expect: ", "# note: "))]
        cases[name] = expects
    return cases


CASES = _cases()


def _expected_line(name: str, expect: str) -> tuple:
    """('PATH:LINE:COL: error: ', text) for one expectation; PATH defaults to the case file."""
    m = EXPECT.fullmatch(expect)
    assert m, f"{name}: malformed expectation {expect!r}"
    path = os.path.normpath(m["path"]) if m["path"] else name
    return f"{path}:{m['line']}:{m['col']}: {m['kind']}: ", m["text"]


def _load(name: str):
    if name.startswith("target_"):
        return load_target(name)
    if name.startswith(("blocks_", "profile_")):
        return check_file(name)
    return load_model(name)


def test_corpus_is_large_and_every_case_has_an_expectation():
    assert len(CASES) >= 45
    for name, expects in CASES.items():
        assert expects and EXPECT.fullmatch(expects[0])["kind"] == "error", name


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_spec_in_process(name, monkeypatch):
    monkeypatch.chdir(BAD)  # locations are reported with the paths the loader was given
    start = time.perf_counter()
    with pytest.raises(SpecError) as info:
        _load(name)
    elapsed = time.perf_counter() - start
    lines = str(info.value).split("\n")
    for i, expect in enumerate(CASES[name]):
        prefix, text = _expected_line(name, expect)
        assert i < len(lines), f"missing note {expect!r} in {str(info.value)!r}"
        assert lines[i].startswith(prefix), lines[i]
        assert text in lines[i][len(prefix):], lines[i]
    assert elapsed < TIME_LIMIT_S, f"{name} took {elapsed:.2f}s"


def test_alias_bomb_fails_fast(monkeypatch):
    monkeypatch.chdir(BAD)
    start = time.perf_counter()
    with pytest.raises(SpecError, match="billion laughs"):
        load_model("yaml_alias_bomb.yaml")
    assert time.perf_counter() - start < 2.0


CLI_CASES = ["yaml_tab.yaml", "yaml_alias_bomb.yaml", "yaml_empty.yaml", "op_unknown.yaml",
             "include_loop.yaml", "weights_corrupt.yaml", "target_unknown_backend.yaml",
             "blocks_unknown_op.yaml", "expr_attribute_access.yaml", "block_bad_attr_in_body.yaml"]


def _cli(*args):
    """The command in this process, run from the bad specs' folder (cli_in_process.py)."""
    return run_main(*args, cwd=BAD)


@pytest.mark.parametrize("name", CLI_CASES)
def test_bad_spec_through_cli(name):
    result = _cli("check", name)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    prefix, text = _expected_line(name, CASES[name][0])
    first = result.stderr.splitlines()[0]
    assert first.startswith(prefix) and text in first, result.stderr
    assert result.stdout == ""


def test_cli_checks_every_file_and_reports_each_failure():
    good = os.path.join(ROOT, "specs", "mlp.yaml")
    result = _cli("check", good, "op_unknown.yaml", "target_missing_arch.yaml")
    assert result.returncode == 1
    assert f"{good}: ok (" in result.stdout
    errors = result.stderr.splitlines()
    assert errors[0].startswith("op_unknown.yaml:9:20: error: unknown op 'linaer'")
    assert errors[1].startswith("target_missing_arch.yaml:2:1: error: a rocm target needs 'arch'")


def test_cli_errors_without_a_location_print_plainly():
    result = _cli("check", "no_such_spec.yaml")
    assert result.returncode == 1
    assert result.stderr.strip() == "no_such_spec.yaml: error: no such file"
    result = _cli("reference", os.path.join(ROOT, "specs", "mlp.yaml"), "--random-input",
                  "--weights", "data/nothing.safetensors")
    assert result.returncode == 1
    assert result.stderr.startswith("error: weights file 'data/nothing.safetensors' not found")
    assert "<unknown>" not in result.stderr and "Traceback" not in result.stderr


# -- mutation fuzzing ------------------------------------------------------------------------------

SEEDS = ["specs/mlp.yaml", "specs/resnet50.yaml", "specs/tiny_cnn.yaml", "targets/h200.yaml",
         "specs/blocks/resnet.yaml"]
SEEDS = [p for p in SEEDS if os.path.exists(os.path.join(ROOT, p))]
ODD_VALUES = [None, True, 0, -1, 2**70, 1.5, float("nan"), "", "x", "$nope", "${1/0}", [], [1, "a"],
              {}, {"k": [None]}, "blocks/resnet.yaml", "float16"]


def _paths(value, prefix=()):
    """Every (path, value) in a nested dict/list structure."""
    yield prefix, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, prefix + (key,))


def _mutate_tree(text: str, data) -> str:
    tree = yaml.safe_load(text)
    paths = [p for p, _ in _paths(tree) if p]
    path = paths[data.draw(st.integers(0, len(paths) - 1))]
    parent = tree
    for key in path[:-1]:
        parent = parent[key]
    if data.draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(st.sampled_from(ODD_VALUES))
    return yaml.safe_dump(tree, sort_keys=False)


def _mutate_text(text: str, data) -> str:
    at = data.draw(st.integers(0, len(text)))
    if data.draw(st.booleans()):
        return text[:at]
    junk = data.draw(st.text(alphabet=st.sampled_from(list("{}[]:,-&*!|>'\"#%@`$ \t\n\x00\u00e9")),
                             min_size=1, max_size=8))
    return text[:at] + junk + text[at:]


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory):
    """A scratch copy of the seed specs next to their block files, so includes resolve."""
    root = tmp_path_factory.mktemp("fuzz")
    for rel in SEEDS + [os.path.join("specs", "blocks", n) for n in os.listdir(os.path.join(ROOT, "specs", "blocks"))]:
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(open(os.path.join(ROOT, rel), "rb").read())
    return root


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_specs_fail_cleanly(data, fuzz_dir):
    seed = data.draw(st.sampled_from(SEEDS))
    text = (fuzz_dir / seed).read_text()
    mutate = data.draw(st.sampled_from([_mutate_tree, _mutate_text]))
    mutated = mutate(text, data)
    path = fuzz_dir / (os.path.dirname(seed) or ".") / ("fuzzed_" + os.path.basename(seed))
    path.write_text(mutated, encoding="utf-8")
    start = time.perf_counter()
    try:
        check_file(str(path))
    except SpecError as exc:
        assert exc.loc is not None, f"an error without a location: {exc}"
    except AitError:
        pass
    assert time.perf_counter() - start < TIME_LIMIT_S
