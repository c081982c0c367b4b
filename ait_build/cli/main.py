"""The `ait-build` command. Exit status: 0 done, 1 the user's input is wrong (an AitError, printed
as `PATH:LINE:COL: error: ...` or `error: ...`), 2 a usage error (argparse), 3 an internal error
(a bug in ait-build: one line that says so and asks for a report; AIT_BUILD_DEBUG=1 shows the
traceback)."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import textwrap
import traceback

from ait_build import __version__
from ait_build.cli.args import OneLineParser
from ait_build.cli.commands import COMMANDS
from ait_build.errors import AitError, format_error

EXIT_USER_ERROR, EXIT_INTERNAL_ERROR = 1, 3
DESCRIPTION = ("A declarative model compiler: YAML model and target specs become fused C++/CUDA "
               "kernels, built by SCons into one shared library per model and target.")
EPILOG = """examples:
  ait-build init demo                              # a new project: SConstruct, specs/, targets/
  ait-build check specs/mlp.yaml                   # validate a spec
  ait-build build specs/mlp.yaml --target cpu      # build/cpu/mlp/libmlp.so
  ait-build run build/cpu/mlp --random-input --check

exit status: 0 done, 1 error in the input, 2 usage error, 3 internal error (please report it)
'ait-build COMMAND -h' describes a command."""


class BrokenCommand(Exception):
    """A command whose module cannot be loaded: a bug in ait-build, named by the command."""


def load_command(name: str, module_name: str):
    """The module of one row of COMMANDS, with everything a command module must have."""
    try:
        module = importlib.import_module(module_name)
        for attribute in ("DESCRIPTION", "EXAMPLES", "add_arguments", "run"):
            getattr(module, attribute)
    except Exception as exc:
        raise BrokenCommand(f"the '{name}' command ({module_name}) cannot be loaded: "
                            f"{type(exc).__name__}: {exc}") from exc
    return module


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="ait-build", description=textwrap.fill(DESCRIPTION, 79),
                           epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"ait-build {__version__}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parser.commands = {}  # name -> its parser, which reports the options it does not know
    for name, module_name, summary in COMMANDS:
        module = load_command(name, module_name)
        # every command's -h shows its description and examples
        p = sub.add_parser(name, help=summary, description=textwrap.fill(module.DESCRIPTION, 79),
                           epilog="examples:\n" + "\n".join(f"  {e}" for e in module.EXAMPLES),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(func=module.run)
        parser.commands[name] = p
    return parser


def internal_error(what: str) -> int:
    """A bug in ait-build, not in the user's input: one line (the traceback with AIT_BUILD_DEBUG)."""
    if os.environ.get("AIT_BUILD_DEBUG"):
        traceback.print_exc()
    else:
        print(f"internal error: {what} (a bug in ait-build: please report it, with the output of "
              "AIT_BUILD_DEBUG=1 and the command)", file=sys.stderr)
    return EXIT_INTERNAL_ERROR


def main(argv=None) -> int:
    try:
        parser = build_parser()
    except BrokenCommand as exc:
        return internal_error(str(exc))
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named by the command's own parser: `ait-build run: ... (see ait-build run --help)`
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        code = args.func(args)
        sys.stdout.flush()  # a full disk under a redirected stdout shows here, not at exit
        return code
    except AitError as exc:
        print(format_error(exc), file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except MemoryError:  # the model's tensors, at the dims asked for, exceed this machine
        print("error: out of memory: the tensors of this model at these dims do not fit in this "
              "machine's memory (smaller dims, --dim or --batch, may)", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:  # `ait-build check ... | head`: the reader left, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            return internal_error(f"{type(exc).__name__}: {exc}")
        # `ait-build graph ... > out.txt` on a full disk: the machine's state, not a bug
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more to flush
        print(f"error: cannot write: {os.strerror(exc.errno)}"
              + (f" ({exc.filename})" if exc.filename else " (the standard output, or a file "
                 "being written)"), file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as exc:  # a bug in ait-build, not in the user's input
        return internal_error(f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
