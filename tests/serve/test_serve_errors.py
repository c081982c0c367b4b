"""`ait-build serve` without a server: the Triton view of a build (layout.py) and the one-line
errors a user meets before anything starts. Needs no PyTriton."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import types

import numpy as np
import pytest

from ait_build.errors import AitError
from ait_build.runtime import load_manifest
from ait_build.runtime.manifest import DimSpec, ModelError, TensorSpec
from ait_build.serve import binding
from ait_build.serve.layout import layout_of
from serving import env


def cli(*args: str, prelude: str = "") -> subprocess.CompletedProcess:
    code = (f"import sys\n{prelude}\nfrom ait_build.cli.main import main\n"
            f"sys.exit(main({list(args)!r}))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env(),
                          timeout=120)


def one_line(proc, rc: int, words: str) -> None:
    assert proc.returncode == rc, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert words in lines[0], lines[0]


def manifest(builds, name: str):
    return load_manifest(f"{builds[name]}/manifest.json")


def test_a_batched_model_drops_the_batch_dim_and_prefers_opt_and_max(builds):
    layout = layout_of(manifest(builds, "mlp"))
    assert layout.batched and layout.max_batch_size == 64
    assert layout.preferred_batch_sizes == (8, 64)
    assert [(t.name, t.dtype, t.shape) for t in layout.inputs] == [("x", np.float32, (32,))]
    assert [(t.name, t.dtype, t.shape) for t in layout.outputs] == [("softmax", np.float32, (16,))]


def test_a_model_without_a_batch_dim_keeps_its_full_shapes(builds):
    layout = layout_of(manifest(builds, "fixed"))
    assert not layout.batched and layout.max_batch_size == 0
    assert layout.unbatched_reason == "it has no 'batch' dim"
    assert [t.shape for t in layout.inputs] == [(2, 8)]


@pytest.mark.parametrize("outputs, reason", [
    ((TensorSpec("y", "float32", ("batch*seq",)),), "'y' [batch*seq] does not lead with 'batch'"),
    ((TensorSpec("y", "float32", ("batch", "batch")),), "'y' [batch, batch] uses 'batch' past"),
])
def test_batch_used_elsewhere_turns_batching_off(builds, outputs, reason):
    m = dataclasses.replace(manifest(builds, "mlp"), outputs=outputs,
                            dims=manifest(builds, "mlp").dims + (DimSpec("seq", 1, 9, 4),))
    layout = layout_of(m)
    assert not layout.batched and layout.unbatched_reason.startswith(reason)
    assert layout.outputs[0].shape == (-1,) * len(outputs[0].shape)


def test_bfloat16_tensors_are_refused(builds):
    m = dataclasses.replace(manifest(builds, "mlp"),
                            inputs=(TensorSpec("x", "bfloat16", ("batch", 32)),))
    with pytest.raises(ModelError, match="'x' is bfloat16, which Triton's Python backend"):
        layout_of(m)


def test_without_pytriton_it_says_which_extra_to_install(builds):
    proc = cli("serve", builds["mlp"], prelude="sys.modules['pytriton'] = None")
    one_line(proc, 1, "`ait-build serve` needs PyTriton (pytriton): pip install 'ait-build[serve]'")


def test_pytriton_is_refused_under_numpy_2(monkeypatch):
    fake = types.ModuleType("pytriton")
    for part in ("decorators", "model_config", "triton"):
        setattr(fake, part, types.ModuleType(f"pytriton.{part}"))
        monkeypatch.setitem(sys.modules, f"pytriton.{part}", getattr(fake, part))
    monkeypatch.setitem(sys.modules, "pytriton", fake)
    monkeypatch.setattr(binding.metadata, "version", lambda name: "0.7.0")
    monkeypatch.setattr(binding.np, "__version__", "2.4.6")
    with pytest.raises(AitError, match=r"PyTriton 0.7.0 needs NumPy < 2 and this environment has "
                       r"NumPy 2.4.6: install ait-build\[serve\] in a virtual environment"):
        binding.pytriton()
    monkeypatch.setattr(binding.np, "__version__", "1.26.4")
    assert binding.pytriton() == (fake.decorators, fake.model_config, fake.triton)


def test_a_folder_that_is_not_a_build(tmp_path):
    one_line(cli("serve", str(tmp_path)), 1, "cannot read the manifest")


def test_one_model_twice(builds):
    one_line(cli("serve", builds["mlp"], builds["mlp"]), 1,
             "are both model 'mlp'; Triton serves one model per name")


@pytest.mark.parametrize("args, rc, words", [
    (["--http-port", "9000", "--grpc-port", "9000"], 1,
     "--grpc-port and --metrics-port must differ"),
    (["--http-port", "70000"], 2, "must be a port (1-65535), got 70000"),
    (["--devices", "0,0"], 2, "expected 'all' or distinct GPU indices such as 0,1, got '0,0'"),
    (["--instances", "0"], 2, "must be >= 1, got 0"),
])
def test_bad_options(builds, args, rc, words):
    one_line(cli("serve", builds["mlp"], *args), rc, words)
