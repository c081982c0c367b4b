"""A model spec's own fields, each a plain function: dims and their ranges and the weights
source (the rules for names are in names.py)."""

from __future__ import annotations

import os

from ait_build.errors import Location, SpecError
from ait_build.files.read import NotRegularFile, check_regular
from ait_build.ir.dims import DimRange
from ait_build.spec.fields import check_keys, check_path, expect_map, get
from ait_build.spec.names import check_identifier
from ait_build.spec.yamlfile import YMap, where
from ait_build.ir.weights import WeightStore

MAX_DIM = 2**31 - 1


def parse_dims(doc: YMap) -> dict:
    """`dims:` -> name -> DimRange."""
    result: dict = {}
    if "dims" not in doc:
        return result
    dims = expect_map(doc["dims"], where(doc, "dims"), "dims")
    for dname, spec in dims.items():
        loc = dims.key_loc[dname]
        check_identifier(dname, loc, "dim")
        what = f"dim '{dname}'"
        spec = expect_map(spec, dims.where(dname), what)
        check_keys(spec, ("min", "max", "opt", "doc"), what, required=("max",))
        lo = get(spec, "min", int, what, default=1)
        hi = get(spec, "max", int, what)
        opt = get(spec, "opt", int, what, default=hi)
        if lo < 1:
            raise SpecError(f"{what}: min must be >= 1, got {lo}", where(spec, "min"))
        if hi > MAX_DIM:
            raise SpecError(f"{what}: max {hi} is over the limit {MAX_DIM}", where(spec, "max"))
        if lo > hi:
            raise SpecError(f"{what}: min {lo} is larger than max {hi}", spec.loc)
        if not lo <= opt <= hi:
            raise SpecError(f"{what}: opt {opt} is outside [{lo}, {hi}]", where(spec, "opt"))
        result[dname] = DimRange(dname, lo, hi, opt)
    return result


def open_weights(doc: YMap, spec_path: str, override: str | None, specs: dict,
                 dtypes: dict) -> WeightStore:
    """The weight store the `weights:` field (or an override file) describes; `specs` maps each
    weight name to (shape, init), `dtypes` to its dtype. A file must hold every weight with its
    exact shape and a dtype of its kind (float or not)."""
    if override is not None:  # a file given on the command line or by a test
        _regular_file(override, override, None)
        return _checked_file(override, override, specs, dtypes, None)
    value = doc.get("weights", None)
    loc = where(doc, "weights")
    if value is None:
        return WeightStore(None, 0, specs)
    if isinstance(value, str):
        path = os.path.join(os.path.dirname(spec_path), check_path(value, loc, "weights file"))
        _regular_file(path, value, loc)
        return _checked_file(path, value, specs, dtypes, loc)
    spec = expect_map(value, loc, "weights")
    check_keys(spec, ("random", "file"), "weights")
    if not spec:
        raise SpecError("weights needs 'random', 'file' or both", loc)
    seed = None
    if "random" in spec:
        rnd = expect_map(spec["random"], where(spec, "random"), "weights.random")
        check_keys(rnd, ("seed",), "weights.random")
        seed = get(rnd, "seed", int, "weights.random", default=0)
    if "file" not in spec:
        return WeightStore(None, seed, specs)
    # with `random` too, the file holds some weights (an imported model's constants) and the
    # others are drawn
    shown = check_path(get(spec, "file", str, "weights"), where(spec, "file"), "weights file")
    path = os.path.join(os.path.dirname(spec_path), shown)
    _regular_file(path, shown, where(spec, "file"))
    return _checked_file(path, shown, specs, dtypes, where(spec, "file"), seed)


def _regular_file(path: str, shown: str, loc: Location | None) -> None:
    """A weights file that exists and is a regular file (a FIFO or a device would block)."""
    try:
        check_regular(path)
    except FileNotFoundError:
        looked = f" (looked for {path})" if path != shown else ""
        raise SpecError(f"weights file '{shown}' not found{looked}", loc) from None
    except NotRegularFile:
        raise SpecError(f"weights file '{shown}' is not a regular file", loc) from None
    except OSError as exc:
        raise SpecError(f"weights file '{shown}': {exc.strerror}", loc) from None


def _checked_file(path: str, shown: str, specs: dict, dtypes: dict,
                  loc: Location | None, seed: int | None = None) -> WeightStore:
    store = WeightStore(path, seed, specs)
    try:
        problems = store.check_file(dtypes)
    except Exception as exc:  # safetensors raises several types for a corrupt file
        raise SpecError(str(exc), loc) from None
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise SpecError(f"weights file '{shown}' does not match the spec: "
                        + "; ".join(problems[:3]) + more, loc)
    return store
