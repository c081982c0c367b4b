"""Where an import of a PyTorch model stops short of the whole module, and says so in one line:

- transformers models with a KV cache (GPT-2's default use_cache=True return a cache object
  torch.export cannot flatten): the cache is turned off; the spec computes the tensor outputs.
- torchvision's one-stage detectors (RetinaNet, SSD, SSDlite, FCOS): anchors, box decoding and
  non-maximum suppression have shapes that depend on the scores, which torch.export cannot
  follow; the import takes the network up to its head (backbone and head on the batch
  `model.transform` makes) and the user runs `model.postprocess_detections` on its outputs.
- any other shape computed from tensor values: one line naming where torch.export stopped,
  instead of the exporter's page of text.
- guards torch.export cannot prove over a --dim range (XLNet's `ceil(2 * seq)`: float
  arithmetic on a size) are evaluated here at every size of the range; where each holds, the
  model is exported again with the range as a hint (`Dim.DYNAMIC`) instead of a promise.
"""

from __future__ import annotations

import math
import re

from ait_build.errors import AitError

DETECTION_PARTS = ("backbone", "head", "anchor_generator", "postprocess_detections")


def prepare(model, say):
    """The module to export in `model`'s place (itself, or the part an import can take)."""
    config = getattr(model, "config", None)
    if getattr(config, "use_cache", False):
        config.use_cache = False
        say(f"note: {type(model).__name__}: use_cache turned off (a KV cache is not an output "
            "of the spec)")
    if all(hasattr(model, part) for part in DETECTION_PARTS) and \
            type(model).__module__.startswith("torchvision.models.detection"):
        say(f"note: {type(model).__name__}: imported up to its head (input: the batch "
            "model.transform makes); anchors, box decoding and NMS depend on the scores: run "
            "model.postprocess_detections on the outputs")
        return detection_network(model)
    return model


def detection_network(model):
    """backbone + head of a torchvision one-stage detector, under their own module names (so
    the state_dict names are the detector's)."""
    import torch

    class DetectionNetwork(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone, self.head = model.backbone, model.head

        def forward(self, images):
            features = self.backbone(images)
            if isinstance(features, dict):
                features = list(features.values())
            elif isinstance(features, torch.Tensor):
                features = [features]
            return self.head(features)

    return DetectionNetwork().eval()


def export_error(exc: Exception, printed: str = "") -> AitError:
    """torch.export's failure as one line (`printed`: what the exporter printed meanwhile)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if "data-dependent" in text or type(exc).__name__ == "GuardOnDataDependentSymNode":
        cause = re.search(r"Caused by: \(([^)]*)\)", text)
        # torch shortens every path by its own install prefix's length, which cuts a path
        # outside it mid-word ("ork/main/..."): the file's name says enough
        where = f" at {cause.group(1).rsplit('/', 1)[-1]}" if cause else ""
        model_line = _last_model_line(text + "\n" + printed)
        if model_line and (not cause or not where[4:].startswith(model_line[0])):
            where += f" (in torch, after the model's {model_line[0]}:{model_line[1]}: " \
                     f"{model_line[2]})"
        return AitError(f"torch.export stopped at a shape computed from tensor values{where} "
                        "(post-processing such as NMS or nonzero): import the network up to "
                        "there, e.g. a factory returning the module without its "
                        "post-processing, and run that part in PyTorch")
    if "not a known type" in text and "in output" in text:
        kind = re.search(r"Found <class '([^']*)'>", text)
        return AitError(f"the model returns a {kind.group(1) if kind else 'non-tensor'} object "
                        "torch.export cannot flatten: return tensors only (for transformers, "
                        "use_cache=False)")
    if first.startswith("Constraints violated"):
        return constraint_error(text)
    return AitError(f"torch.export failed: {first}")


def _last_model_line(text: str):
    """(file, line, code) of the last line of the model's own code in the graph torch.export
    printed before it stopped (Longformer's chunked attention stops inside torch's as_strided,
    whose place says nothing to the user); None without one."""
    found = None
    for m in re.finditer(r"# File: (\S+):(\d+) in \w+, code: (.*)", text):
        if "/torch/" not in m.group(1):
            code = m.group(3).strip()
            found = (m.group(1).rsplit("/", 1)[-1], m.group(2),
                     code if len(code) <= 60 else code[:57] + "...")
    return found


def constraint_error(text: str) -> AitError:
    """A dim whose --dim range holds sizes the model does not take (MobileBERT: seq 2)."""
    found = []
    for m in re.finditer(r"Not all values of (\w+) = (.*?) in the specified range (.*?) satisfy "
                         r"the generated guard (.*?)\.?$", text, re.M):
        name, source, guard = m.group(1), m.group(2), m.group(4)
        found.append(f"{name} must satisfy {guard.replace(source, name)}")
    for m in re.finditer(r"You marked (\w+) as dynamic but your code specialized it to be a "
                         r"constant \((\d+)\)", text):
        found.append(f"the model fixes {m.group(1)} to {m.group(2)}")
    what = "; ".join(found) or text.splitlines()[0]
    return AitError(f"torch.export: the model does not take every size the --dim ranges allow "
                    f"({what}): narrow the ranges, or give those sizes as numbers")


GUARD = re.compile(r"Not all values of (\w+) = (.*?) in the specified range (.*?) satisfy the "
                   r"generated guard (.*?)\.?$", re.M)
GUARD_NAMES = {"math", "ceil", "floor", "torch", "sym_float", "sym_int", "sym_max", "sym_min",
               "int", "float", "abs", "min", "max"}
MOST_SIZES = 1 << 16  # a range evaluated size by size


def guards_hold(text: str, dims: dict) -> frozenset:
    """The dims whose guards `text` (torch.export's "Constraints violated") names, when it
    names only guards of one dim each that hold at every size of that dim's --dim range: torch
    could not prove them (float arithmetic on sizes), they are true. Empty when one fails
    somewhere, or cannot be read."""
    import torch
    found = [(m.group(1), m.group(4).replace(m.group(2), m.group(1)))
             for m in GUARD.finditer(text)]
    if not found or len(found) != text.count("Not all values of") or "specialized" in text:
        return frozenset()
    for name, guard in found:
        d = dims.get(name)
        if d is None or d.max - d.min >= MOST_SIZES:
            return frozenset()
        try:
            code = compile(guard, "<guard>", "eval")
        except SyntaxError:
            return frozenset()
        if not set(code.co_names) <= GUARD_NAMES | {name}:
            return frozenset()
        scope = {"__builtins__": {"int": int, "float": float, "abs": abs, "min": min,
                                  "max": max}, "math": math, "torch": torch}
        try:
            if not all(eval(code, scope, {name: n}) for n in range(d.min, d.max + 1)):
                return frozenset()
        except Exception:  # noqa: BLE001 - a guard we cannot evaluate is not shown to hold
            return frozenset()
    return frozenset(name for name, _ in found)
