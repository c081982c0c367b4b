"""The user's model, made by the factory `ait-build import torch MODULE:FACTORY` names: its module
imported from the working directory, the factory called with `--args` under a fixed seed.
Whatever that code raises is the import's error, said in one line; so is an os._exit or
os.abort in it (user_code)."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys

from ait_build.errors import AitError


class _ProcessEnd(BaseException):
    """The user's code called os._exit or os.abort (user_code raised this instead): a
    BaseException, so that its own `except Exception` does not swallow it."""


@contextlib.contextmanager
def user_code(target: str):
    """Around the user's model code (its module's import, the factory, the forward that
    torch.export runs): os._exit and os.abort, which would end ait-build's process without a
    word (os._exit(0) with a success status and no spec written), raise instead, and the import
    fails with that said. A process forked meanwhile keeps the real ones."""
    real_exit, real_abort, pid = os._exit, os.abort, os.getpid()

    def _exit(status=0):
        if os.getpid() != pid:
            real_exit(status)
        raise _ProcessEnd(f"os._exit({status})")

    def _abort():
        if os.getpid() != pid:
            real_abort()
        raise _ProcessEnd("os.abort()")

    os._exit, os.abort = _exit, _abort
    try:
        yield
    except _ProcessEnd as end:
        raise AitError(f"'{target}' tried to end the process ({end}); the model's code must "
                       "return the model (or raise) for the import to go on") from None
    finally:
        os._exit, os.abort = real_exit, real_abort


def load_factory(target: str, args_json: str | None):
    """MODULE:FACTORY -> the eval-mode module the factory returns (kwargs from --args JSON)."""
    module_name, colon, attr = target.partition(":")
    if not colon or not module_name or not attr:
        raise AitError(f"expected MODULE:FACTORY (e.g. torchvision.models:resnet50), got '{target}'")
    if os.getcwd() not in sys.path:  # a factory in the user's own project
        sys.path.insert(0, os.getcwd())
    try:
        kwargs = json.loads(args_json) if args_json else {}
    except (json.JSONDecodeError, RecursionError) as exc:
        raise AitError(f"--args is not JSON that can be read: {exc}") from None
    if not isinstance(kwargs, dict):
        raise AitError("--args must be a JSON object of keyword arguments")
    # the user's code runs here: whatever it raises (or exits with) is its error, said in a line
    with user_code(target):
        return _make(target, module_name, attr, kwargs)


def _make(target: str, module_name: str, attr: str, kwargs: dict):
    import torch
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AitError(f"cannot import module '{module_name}': {exc}") from None
    except (Exception, SystemExit) as exc:
        raise AitError(f"importing module '{module_name}' failed: {said(exc)}") from None
    factory = module
    for part in attr.split("."):
        try:
            factory = getattr(factory, part)
        except AttributeError:
            raise AitError(f"module '{module_name}' has no '{attr}'") from None
        except (Exception, SystemExit) as exc:
            raise AitError(f"reading '{attr}' of module '{module_name}' failed: {said(exc)}") from None
    if not callable(factory):
        raise AitError(f"'{target}' is a {type(factory).__name__}, not a function or class that "
                       "makes the model")
    cwd = os.getcwd()
    # under a fixed seed, so that a factory drawing its weights at random (torchvision's with
    # weights=None) makes the same module at import and when `bench --vs torch` rebuilds it:
    # parameters the import folded into constants (Swin V2's position-bias MLP and logit
    # scale) are not in the spec, and the rebuilt module must have the same ones
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model = factory(**kwargs)
    except (Exception, SystemExit) as exc:
        raise AitError(f"'{target}' failed to make the model: {said(exc)}") from None
    finally:
        os.chdir(cwd)  # a factory that moved elsewhere must not move where the spec is written
    if not isinstance(model, torch.nn.Module):
        raise AitError(f"'{target}' returned a {type(model).__name__}, not a torch.nn.Module")
    return model.eval()


def said(exc: BaseException) -> str:
    """An exception of the user's code as one line: its type and message."""
    text = str(exc).strip().splitlines()
    return type(exc).__name__ + (f": {text[0]}" if text else "")
