"""bench/plain_kernels.py: the float16 copy of a spec planned for a GPU target, and the build's
line on calls that run plain fallback kernels (no GPU, no compiler)."""

from __future__ import annotations

import yaml

from bench_scripts import load

SPEC = {
    "apiVersion": "ait-build/v1", "kind": "Model", "name": "odd", "dtype": "float32",
    "dims": {"batch": {"min": 1, "max": 8, "opt": 2}},
    "inputs": {"x": {"shape": ["batch", 10, 10, 64]}},
    "weights": {"random": {"seed": 0}},
    "graph": [
        {"name": "g3", "op": "conv2d", "inputs": ["x"], "out_channels": 48, "kernel": 3,
         "padding": 1, "groups": 16},
        {"name": "g4", "op": "conv2d", "inputs": ["x"], "out_channels": 64, "kernel": 3,
         "padding": 1, "groups": 16},
        {"name": "head", "op": "conv2d", "inputs": ["x"], "out_channels": 21, "kernel": 1}],
    "outputs": ["g3", "g4", "head"],
}


def test_scan_names_the_calls_left_on_plain_kernels(tmp_path):
    plain_kernels = load("plain_kernels")
    spec = tmp_path / "odd.yaml"
    spec.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    line = plain_kernels.scan(str(spec), "h200", str(tmp_path))
    # 4 -> 3 channels per group stays on the direct conv; 4 -> 4 merges into groups of 8 and the
    # 21-class head is padded to 24, so neither is named
    assert line.endswith("1 GEMM/conv calls run plain kernels without tensor or matrix cores, "
                         "far slower: g3 (direct conv: 4 -> 3 channels per group)")
    clean = dict(SPEC, graph=SPEC["graph"][1:], outputs=["g4", "head"], name="clean")
    spec.write_text(yaml.safe_dump(clean, sort_keys=False))
    assert plain_kernels.scan(str(spec), "h200", str(tmp_path)).endswith("; no plain kernels")
