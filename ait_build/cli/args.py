"""Command-line values checked where argparse reads them, so a bad value is a usage error (one
line, exit status 2) before any work starts, never a traceback from deep inside a command; and
output paths checked before the work that fills them."""

from __future__ import annotations

import argparse
import sys

from ait_build.errors import AitError


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a usage error as one line on stderr and exit status 2."""

    def error(self, message: str):
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        sys.exit(2)


def _int(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None


def positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def bounded_int(most: int):
    """An argparse type: an integer from 1 to `most`."""
    def parse(text: str) -> int:
        value = positive_int(text)
        if value > most:
            raise argparse.ArgumentTypeError(f"must be at most {most}, got {value}")
        return value
    return parse


def nonnegative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_int_list(text: str) -> list:
    """'1,32,256' -> [1, 32, 256]."""
    values = [positive_int(part.strip()) for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got '{text}'")
    return values


def dim_value(text: str) -> tuple:
    """'seq=128' -> ('seq', 128)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"takes NAME=VALUE, got '{text}'")
    try:
        return name.strip(), positive_int(value.strip())
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"'{text}': the value {exc}") from None


def dims_of(pairs, batch: int | None = None) -> dict:
    """--dim NAME=VALUE pairs (and --batch) as one dict; two values for one dim are an error."""
    dims: dict = {}
    for name, value in pairs or []:
        if name in dims and dims[name] != value:
            raise AitError(f"dim '{name}' is given twice ({dims[name]} and {value})")
        dims[name] = value
    if batch is not None:
        if dims.get("batch", batch) != batch:
            raise AitError(f"dim 'batch' is given twice ({dims['batch']} and --batch {batch})")
        dims["batch"] = batch
    return dims


def add_input_arguments(p) -> None:
    """The inputs of a run (`reference`, `run`): random at the dims given, or from a file."""
    source = p.add_mutually_exclusive_group()  # one of the two: which would the run take?
    source.add_argument("--random-input", action="store_true",
                        help="random inputs at each dim's opt")
    source.add_argument("--inputs", metavar="FILE", help="inputs from a safetensors file")
    p.add_argument("--batch", type=positive_int, help="value of the 'batch' dim, e.g. --batch 4")
    p.add_argument("--dim", action="append", type=dim_value, metavar="NAME=VALUE",
                   help="a dim's value (repeatable), e.g. --dim seq=64")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of the random inputs (default: 0)")


def add_spec_argument(p, many: bool = False) -> None:
    """The model spec a command reads (`many`: one or more): a file, or a model name under the
    project's specs/ (ir/resources.py's project_spec)."""
    if many:
        p.add_argument("spec", nargs="+", help="spec files, or model names under specs/, e.g. "
                       "mlp resnet50")
    else:
        p.add_argument("spec", help="spec file, or a model name under specs/, e.g. mlp")


def add_target_argument(p, default: str | None = "cpu", required: bool = False,
                        purpose: str = "", paths: bool = False) -> None:
    """--target: a name from `ait-build targets` (the project's targets/, then the stock ones),
    or also a target file where the command takes one (`paths`); `purpose` leads the help where
    the option changes what the command does."""
    what = "a name from `ait-build targets`" + (" or a target file" if paths else "")
    when = " (required)" if required else f" (default: {default})" if default else ""
    help_text = (f"{purpose}: {what}" if purpose else what) + when + ", e.g. --target h200"
    p.add_argument("--target", default=default, required=required, help=help_text)
