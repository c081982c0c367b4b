"""Importers: PyTorch modules (torch.export) and ONNX files -> a model spec and its weights.

`ait-build import torch|onnx` (importers/cli.py). Both frontends translate into an ImportGraph
(graph.py) through the same source-semantics helpers (lower.py); simplify.py (with views.py),
blocks.py and write.py turn it into the spec. torch and onnx are optional: nothing here imports
them at module level.
"""
