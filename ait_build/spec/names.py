"""What a name in a spec may hold: only what every layer it reaches can carry as it is.

Names travel far: a model name becomes file names (lib<name>.so, <name>.h), a build folder, an
SCons alias and C identifiers (ait_<name>_run); tensor, node and weight names go into C string
literals and comments, safetensors keys, manifest.json and `ait-build run -o` files; dim names
become C variables and terms of the dim expressions the runtime parses. So the rules are ASCII,
decided here once, and checked by `ait-build check` with the name's location:

- model and target: letters, digits, `_` and `-`, starting with a letter, a digit or `_`; at
  most 64;
- tensor, node, weight, input and output names: letters, digits, `_`, `.` and `-` (PyTorch's
  `encoder.layer.0.attention`); at most 200;
- dims, blocks and block params: identifiers (letters, digits, `_`, not starting with a digit)
  that are not Python keywords (expressions are parsed as Python); at most 64.
"""

from __future__ import annotations

import keyword
import re

from ait_build.errors import Location, SpecError, shown

MODEL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")
TENSOR_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def check_model_name(name, loc: Location, what: str = "model",
                     names: str = "files and C functions") -> None:
    """A model's name, or (`what`) a target's: `names` says what it becomes."""
    if not isinstance(name, str) or not MODEL_NAME.fullmatch(name):
        raise SpecError(f"{what} name {shown(name)} may only hold ASCII letters, digits, '_' and "
                        f"'-' (not first), at most 64 of them: it names {names}"
                        + _unquoted(name), loc)


def check_target_name(name, loc: Location) -> None:
    """A target's name: the model name's rules (it names build folders, build/<target>/...)."""
    check_model_name(name, loc, "target", "build folders")


def check_name(name, loc: Location, what: str) -> None:
    """A tensor, node, weight, input or output name."""
    if not isinstance(name, str) or not TENSOR_NAME.fullmatch(name):
        raise SpecError(f"{what} name {shown(name)} may only hold ASCII letters, digits, '_', '.' "
                        "and '-', at most 200 of them (it may not be empty or hold spaces)"
                        + _unquoted(name), loc)


def check_identifier(name, loc: Location, what: str, reserved=()) -> None:
    """A dim, block or block param name."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name) or keyword.iskeyword(name):
        raise SpecError(f"{what} name {shown(name)} must be an identifier: ASCII letters, digits "
                        "and '_', not starting with a digit, at most 64, not a Python keyword"
                        + _unquoted(name, numbers=False), loc)
    if name in reserved:
        raise SpecError(f"{what} name '{name}' is reserved ({', '.join(reserved)})", loc)


def _unquoted(name, numbers: bool = True) -> str:
    """A name that YAML read as another type: `yes`, `on`, `null` or (where a name may be
    digits) `123` unquoted are no strings."""
    if isinstance(name, bool) or name is None:
        return "; YAML reads yes, no, on, off, true, false and null unquoted as values, not " \
               "names: quote it"
    return "; YAML reads it as a number: quote it" if numbers and isinstance(name, (int, float)) \
        else ""
