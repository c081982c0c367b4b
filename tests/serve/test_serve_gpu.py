"""`ait-build serve` of cuda (h200) builds on every GPU of the machine, two instances each:
concurrent clients over HTTP and gRPC get what Model.run gives on device 0, and SIGTERM stops it
(tests/serve/test_serve.py checks the rest on cpu)."""

from __future__ import annotations

import re
import signal

import pytest

from ait_build.runtime import ModelError, cuda
from serving import build_models, check_responses, run_clients, start_server

pytestmark = pytest.mark.gpu


def test_cuda_builds_on_every_gpu(serve_python, tmp_path):
    try:
        count = cuda.runtime().device_count()
    except ModelError as exc:
        pytest.skip(f"no CUDA runtime: {exc}")
    builds = build_models(str(tmp_path / "proj"), "h200")
    server = start_server(serve_python, [builds["mlp"], builds["fixed"]], tmp_path / "server.log",
                          "--instances", "2", "--devices", "all")
    try:
        run_clients(serve_python, server, str(tmp_path))
        text = server["log"].read_text()
        gpus = ", ".join(map(str, range(count)))
        assert re.search(rf"mlp: {2 * count} instances on GPUs {gpus}, dynamic batching", text)
        assert check_responses(builds, str(tmp_path), device=0) == 48
        server["proc"].send_signal(signal.SIGTERM)
        assert server["proc"].wait(timeout=30) == 0
    finally:
        if server["proc"].poll() is None:
            server["proc"].kill()
            server["proc"].wait()
