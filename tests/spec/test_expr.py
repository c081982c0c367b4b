"""`$name` and `${expression}`: what evaluates, what keeps its type, and what is refused."""

from __future__ import annotations

import pytest

from ait_build.errors import Location, SpecError
from ait_build.spec.expr import evaluate, substitute

LOC = Location("spec.yaml", 3, 7)
ENV = {"hidden": 64, "heads": 4, "i": 2, "act": "gelu", "flag": True}


@pytest.mark.parametrize("text, value", [
    ("$hidden", 64), ("${hidden // heads}", 16), ("${hidden / heads}", 16.0), ("${hidden % 5}", 4),
    ("${-i + 1}", -1), ("${i == 2}", True), ("${0 < i <= 2}", True), ("${not flag}", False),
    ("${flag and i > 5}", False), ("${2 if i == 0 else 1}", 1), ("${min(i, 1)}", 1),
    ("${max(hidden, 100)}", 100), ("${int('3') + 1}", 4), ("$act", "gelu"), ("${true}", True),
    ("${'layer' + str(i)}", "layer2"),
])
def test_whole_string_references_keep_their_type(text, value):
    result = substitute(text, ENV, LOC)
    assert result == value and type(result) is type(value)


def test_references_inside_a_string_are_formatted():
    assert substitute("blocks.${i + 1}.$act", ENV, LOC) == "blocks.3.gelu"


def test_values_without_a_dollar_are_left_alone():
    assert substitute("plain", ENV, LOC) == "plain" and substitute(7, ENV, LOC) == 7


@pytest.mark.parametrize("text, message", [
    ("hidden.__class__", "unsupported syntax"),
    ("__import__('os')", "unsupported syntax"),
    ("hidden ** 2", "unsupported syntax"),
    ("[hidden]", "unsupported syntax"),
    ("lambda: 1", "unsupported syntax"),
    ("hiden", "unknown name 'hiden' in expression 'hiden' (did you mean 'hidden'?)"),
    ("hidden +", "bad expression 'hidden +'"),
    ("hidden // 0", "cannot evaluate 'hidden // 0'"),
    ("'%099999999d' % 1", "string formatting with % is not supported"),
    ("'x' * 100000000", "too large"),
    ("hidden * hidden * hidden * hidden * hidden * hidden * hidden * hidden * hidden * hidden * hidden",
     "too large"),
    ("min()", "cannot evaluate"),
    ("1 < 'a'", "cannot evaluate"),
    ("x" * 300, "longer than 200 characters"),
])
def test_refused_expressions_are_located_errors(text, message):
    with pytest.raises(SpecError) as info:
        evaluate(text, ENV, LOC)
    assert info.value.loc == LOC and message in info.value.message
