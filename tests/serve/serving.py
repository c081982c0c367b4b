"""What the serving tests share: the two test builds (mlp, batched; `fixed`, without a batch
dim, so served without batching) made through the run's SCons cache, the environment the server
and its clients run in (this checkout's package first), starting `ait-build serve` on free
ports, running clients.py against it and comparing what it got with Model.run."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np

from ait_build.runtime import Model

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "build"))  # buildproj: the test projects' builds

from buildproj import make_project  # noqa: E402

START_TIMEOUT_S = 90

FIXED_SPEC = """apiVersion: ait-build/v1
kind: Model
name: fixed
description: no batch dim, so served without batching
dtype: float32
inputs:
  x: {shape: [2, 8]}
weights: {random: {seed: 1}}
graph:
  - {name: fc, op: linear, out_features: 4}
  - {op: relu}
outputs: [relu]
"""


def build_models(folder: str, target: str) -> dict:
    """{'mlp': build folder, 'fixed': build folder}, built for `target` in a project at `folder`."""
    project = make_project(folder, shared_cache=True)
    with open(project.path("specs", "fixed.yaml"), "w") as fh:
        fh.write(FIXED_SPEC)
    for model in ("mlp", "fixed"):
        project.scons(f"target={target}", f"model={model}")
    return {m: project.path("build", target, m) for m in ("mlp", "fixed")}


def env() -> dict:
    return dict(os.environ, PYTHONPATH=REPO, PYTHONUNBUFFERED="1")


def free_ports(count: int) -> list:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def get(url: str) -> tuple:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except OSError as exc:
        return getattr(exc, "code", None), str(exc)


READY_LINE = "SIGINT or SIGTERM stops"
# PyTriton 0.7 races between a model's instances at load: a second instance may connect to the
# first one's handshake socket before it listens (on a busy machine), and the load fails
INSTANCE_RACE = "get_config_from_handshake_server"


def start_server(python: str, build_dirs: list, log_path, *args: str) -> dict:
    """`ait-build serve` in a subprocess, its output in log_path, once it has said it serves
    and its last model is ready: {'proc', 'http', 'grpc', 'metrics', 'log', 'started_s'}.
    Started again once where PyTriton's instance race failed it; AssertionError if it does not
    start."""
    for attempt in range(2):
        try:
            return _start(python, build_dirs, log_path, *args)
        except AssertionError as exc:
            if attempt or INSTANCE_RACE not in str(exc):
                raise
    raise AssertionError("unreachable")


def _start(python: str, build_dirs: list, log_path, *args: str) -> dict:
    http, grpc, metrics = free_ports(3)
    with open(log_path, "w") as log:
        proc = subprocess.Popen([python, "-m", "ait_build", "serve", *build_dirs,
                                 "--http-port", str(http), "--grpc-port", str(grpc),
                                 "--metrics-port", str(metrics), *args],
                                stdout=log, stderr=subprocess.STDOUT, env=env())
    last = os.path.basename(os.path.normpath(build_dirs[-1]))
    start = time.monotonic()
    while (READY_LINE not in log_path.read_text()
           or get(f"http://localhost:{http}/v2/models/{last}/ready")[0] != 200):
        if proc.poll() is not None or time.monotonic() - start > START_TIMEOUT_S:
            proc.kill()
            proc.wait()
            raise AssertionError(f"the server did not start:\n{log_path.read_text()[-8000:]}")
        time.sleep(0.2)
    return {"proc": proc, "http": http, "grpc": grpc, "metrics": metrics, "log": log_path,
            "started_s": time.monotonic() - start}


def run_clients(python: str, server: dict, out: str) -> str:
    proc = subprocess.run([python, os.path.join(HERE, "clients.py"), str(server["http"]),
                           str(server["grpc"]), out], capture_output=True, text=True, env=env(),
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    return out


def check_responses(builds: dict, out: str, **model_args) -> int:
    """Every saved response equals Model.run on the same input; returns how many."""
    saved = np.load(os.path.join(out, "requests.npz"))
    keys = sorted(k for k in saved.files if k.endswith("_in"))
    models = {name: Model(path, **model_args) for name, path in builds.items()}
    try:
        for key in keys:
            name = key.split("_")[1]
            want = next(iter(models[name].run({"x": saved[key]}).values()))
            np.testing.assert_allclose(saved[key[:-2] + "out"], want, rtol=1e-5, atol=1e-6,
                                       err_msg=key)
    finally:
        for model in models.values():
            model.close()
    return len(keys)
