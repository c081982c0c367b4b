"""Clients of a running `ait-build serve`, run by the serving environment's Python (tritonclient
there; PyTriton 0.7 pins NumPy < 2, which the test run's own environment need not have):
`python clients.py HTTP_PORT GRPC_PORT OUT_DIR`.

Sends concurrent requests of random batch sizes to the batched model `mlp` over HTTP and gRPC
(and a few to the unbatched `fixed`), then the bad requests, then one good request again.
Writes OUT_DIR/requests.npz (each request's input and output, keyed `<i>_<model>_<in|out>`) and
OUT_DIR/errors.json (each bad request's message, and whether the server still answered)."""

from __future__ import annotations

import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

CONCURRENT = 24  # requests in flight at once, half over each protocol


def request(module, client, model: str, inputs: dict, dtypes: dict | None = None):
    wrapped = []
    for name, array in inputs.items():
        item = module.InferInput(name, list(array.shape), (dtypes or {}).get(name, "FP32"))
        item.set_data_from_numpy(array)
        wrapped.append(item)
    return client.infer(model, wrapped)


def main(http_port: str, grpc_port: str, out: str) -> None:
    grpc = grpcclient.InferenceServerClient(f"localhost:{grpc_port}")  # thread-safe
    own = threading.local()  # the HTTP client (gevent) serves only the thread that made it
    made = []

    def http():
        if not hasattr(own, "client"):
            own.client = httpclient.InferenceServerClient(f"localhost:{http_port}")
            made.append(own.client)
        return own.client

    rng = np.random.default_rng(0)
    jobs = []
    for i in range(CONCURRENT * 2):
        model = "fixed" if i % 8 == 7 else "mlp"
        shape = (2, 8) if model == "fixed" else (int(rng.integers(1, 9)), 32)
        jobs.append((i, model, i % 2, {"x": rng.standard_normal(shape, np.float32)}))

    def send(job):
        i, model, over_http, inputs = job
        module, client = (httpclient, http()) if over_http else (grpcclient, grpc)
        output = "softmax" if model == "mlp" else "relu"
        return i, model, inputs["x"], request(module, client, model, inputs).as_numpy(output)

    saved = {}
    with ThreadPoolExecutor(CONCURRENT) as pool:
        for i, model, x, y in pool.map(send, jobs):
            saved[f"{i}_{model}_in"], saved[f"{i}_{model}_out"] = x, y
    np.savez(os.path.join(out, "requests.npz"), **saved)

    x = np.ones((2, 32), np.float32)
    bad = {
        "wrong shape": lambda m, c: request(m, c, "mlp", {"x": np.ones((2, 31), np.float32)}),
        "wrong dtype": lambda m, c: request(m, c, "mlp", {"x": x.astype(np.float64)},
                                            {"x": "FP64"}),
        "missing input": lambda m, c: request(m, c, "mlp", {}),
        "oversize batch": lambda m, c: request(m, c, "mlp", {"x": np.ones((65, 32), np.float32)}),
        "unknown input": lambda m, c: request(m, c, "mlp", {"x": x, "y": x}),
    }
    errors = {}
    for protocol, module, client in (("http", httpclient, http()), ("grpc", grpcclient, grpc)):
        for what, call in bad.items():
            try:
                call(module, client)
                errors[f"{protocol} {what}"] = None
            except InferenceServerException as exc:
                errors[f"{protocol} {what}"] = exc.message()
    after = request(httpclient, http(), "mlp", {"x": x}).as_numpy("softmax")
    errors["serving after"] = after.shape == (2, 16) and bool(np.isfinite(after).all())
    with open(os.path.join(out, "errors.json"), "w") as fh:
        json.dump(errors, fh, indent=1)
    for client in made + [grpc]:
        client.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
