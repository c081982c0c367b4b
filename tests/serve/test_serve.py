"""`ait-build serve` end to end on cpu: one server (two builds, two instances each) started in a
subprocess on free ports, concurrent clients over HTTP and gRPC (clients.py), every response
compared with Model.run, bad requests answered with clear errors while the server keeps serving,
the metrics endpoint, and a quick clean stop on SIGTERM. The tests share the server and run in
file order: the last one stops it."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request

import numpy as np
import pytest

from ait_build.runtime import Model
from serve_env import env

HERE = os.path.dirname(os.path.abspath(__file__))
START_TIMEOUT_S = 90
STOP_LIMIT_S = 15
QUEUE_DELAY_US = 20000  # long enough for concurrent requests to meet in one batch on 2 cores


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


@pytest.fixture(scope="module")
def server(serve_python, builds, tmp_path_factory):  # no build where nothing can serve
    http, grpc, metrics = free_ports(3)
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    log = open(log_path, "w")
    proc = subprocess.Popen([serve_python, "-m", "ait_build", "serve", builds["mlp"],
                             builds["fixed"], "--http-port", str(http), "--grpc-port", str(grpc),
                             "--metrics-port", str(metrics), "--instances", "2",
                             "--max-queue-delay-us", str(QUEUE_DELAY_US)],
                            stdout=log, stderr=subprocess.STDOUT, env=env())
    info = {"proc": proc, "http": http, "grpc": grpc, "metrics": metrics, "log": log_path}
    deadline = time.monotonic() + START_TIMEOUT_S
    while get(f"http://localhost:{http}/v2/models/fixed/ready")[0] != 200:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the server did not start:\n{log_path.read_text()[-4000:]}")
        time.sleep(0.2)
    info["started_s"] = START_TIMEOUT_S - (deadline - time.monotonic())
    yield info
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    log.close()


@pytest.fixture(scope="module")
def client_run(server, serve_python, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("clients"))
    proc = subprocess.run([serve_python, os.path.join(HERE, "clients.py"), str(server["http"]),
                           str(server["grpc"]), out], capture_output=True, text=True, env=env(),
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    return out


def test_it_says_how_each_model_is_served(server):
    text = server["log"].read_text()
    assert "mlp: 2 instances on cpu, dynamic batching up to 64 (preferred 8, 64" in text
    assert "fixed: 2 instances on cpu, no batching: it has no 'batch' dim" in text


def test_the_model_configs_triton_holds(server):
    status, text = get(f"http://localhost:{server['http']}/v2/models/mlp")
    assert status == 200, text
    meta = json.loads(text)
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 32]}]
    assert meta["outputs"] == [{"name": "softmax", "datatype": "FP32", "shape": [-1, 16]}]
    meta = json.loads(get(f"http://localhost:{server['http']}/v2/models/fixed")[1])
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [2, 8]}]


def test_every_response_matches_model_run(builds, client_run):
    saved = np.load(os.path.join(client_run, "requests.npz"))
    keys = sorted(k for k in saved.files if k.endswith("_in"))
    assert len(keys) == 48 and any("_fixed_" in k for k in keys)
    models = {name: Model(path) for name, path in builds.items()}
    try:
        for key in keys:
            name = key.split("_")[1]
            want = next(iter(models[name].run({"x": saved[key]}).values()))
            np.testing.assert_allclose(saved[key[:-2] + "out"], want, rtol=1e-5, atol=1e-6,
                                       err_msg=key)
    finally:
        for model in models.values():
            model.close()


def test_concurrent_requests_were_batched(server, client_run):
    status, text = get(f"http://localhost:{server['metrics']}/metrics")
    assert status == 200, text
    counts = {metric: int(float(value)) for metric, value in re.findall(
        r'^(nv_inference_(?:request_success|exec_count))\{model="mlp",version="1"\} (\S+)$',
        text, re.M)}
    # 42 concurrent mlp requests and the good one after the bad ones
    assert counts["nv_inference_request_success"] == 43, counts
    assert counts["nv_inference_exec_count"] < 43, counts  # some runs took several requests


@pytest.mark.parametrize("what, words", [
    ("wrong shape", "unexpected shape for input 'x' for model 'mlp'. Expected [-1,32], got [2,31]"),
    ("wrong dtype", "inference input 'x' data-type is 'FP64', but model 'mlp' expects 'FP32'"),
    ("missing input", "missing required input(s) ['x']"),
    ("oversize batch", "inference request batch-size must be <= 64 for 'mlp'"),
    ("unknown input", "expected 1 inputs but got 2 inputs for model 'mlp'"),
])
@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_bad_requests_get_clear_errors(client_run, protocol, what, words):
    with open(os.path.join(client_run, "errors.json")) as fh:
        errors = json.load(fh)
    message = errors[f"{protocol} {what}"]
    assert message is not None, f"{protocol} {what} was answered"
    assert words in message
    assert "Traceback" not in message


def test_the_server_still_serves_after_bad_requests(client_run, server):
    with open(os.path.join(client_run, "errors.json")) as fh:
        assert json.load(fh)["serving after"] is True
    assert server["proc"].poll() is None


def test_sigterm_stops_it_cleanly_and_quickly(server):
    proc = server["proc"]
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=STOP_LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {STOP_LIMIT_S} s after SIGTERM")
    took = time.monotonic() - start
    text = server["log"].read_text()
    assert rc == 0, text[-4000:]
    assert text.rstrip().endswith("stopped"), text[-2000:]
    assert "Traceback" not in text
    for port in (server["http"], server["grpc"], server["metrics"]):
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still open"
    print(f"started in {server['started_s']:.1f} s, stopped in {took:.1f} s")
