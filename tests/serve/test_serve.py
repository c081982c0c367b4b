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

import pytest

from serving import check_responses, get, run_clients, start_server

STOP_LIMIT_S = 15
QUEUE_DELAY_US = 20000  # long enough for concurrent requests to meet in one batch on 2 cores


@pytest.fixture(scope="module")
def server(serve_python, builds, tmp_path_factory):  # no build where nothing can serve
    info = start_server(serve_python, [builds["mlp"], builds["fixed"]],
                        tmp_path_factory.mktemp("server") / "server.log",
                        "--instances", "2", "--max-queue-delay-us", str(QUEUE_DELAY_US))
    yield info
    if info["proc"].poll() is None:
        info["proc"].kill()
        info["proc"].wait()


@pytest.fixture(scope="module")
def client_run(server, serve_python, tmp_path_factory) -> str:
    return run_clients(serve_python, server, str(tmp_path_factory.mktemp("clients")))


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
    assert check_responses(builds, client_run) == 48


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
