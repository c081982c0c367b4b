"""Built models served by Triton Inference Server through PyTriton (PyPI nvidia-pytriton, which
carries the server): each build is bound as a Triton model whose instances each hold a Model, on
every device asked for, and Triton's dynamic batcher forms the batches (layout.py).

PyTriton is optional (the `serve` extra) and heavy to import, so it is imported when serving
starts, not when the command line is built."""

from __future__ import annotations

import os
import re
import signal
import sysconfig
from dataclasses import dataclass
from importlib import metadata

import numpy as np

from ait_build.errors import AitError
from ait_build.runtime import Model
from ait_build.runtime.devices import device_control
from ait_build.serve.layout import Layout, layout_of

INSTALL_HINT = "pip install 'ait-build[serve]'"


@dataclass(frozen=True)
class ServeOptions:
    http_port: int = 8000
    grpc_port: int = 8001
    metrics_port: int = 8002
    instances: int = 1  # per device (per build, for host builds)
    max_queue_delay_us: int = 100
    devices: tuple | None = None  # GPUs of GPU builds; None: every visible one
    exit_timeout_s: int = 5  # how long Triton waits for open requests and connections at exit


@dataclass
class Served:
    """One build as bound: its layout and the Models its instances run."""

    layout: Layout
    models: list  # Model, one per instance
    where: str  # 'cpu' or 'GPUs 0, 1'


def pytriton():
    """PyTriton's modules, or an AitError that says how to install them. PyTriton's NumPy code
    needs NumPy < 2: under NumPy 2 its responses come back empty (0.5.7 and 0.7.0 both, though
    only 0.7 declares the pin), so NumPy 2 is refused here rather than served wrong."""
    try:
        from pytriton import decorators, model_config, triton
    except ImportError as exc:
        raise AitError(f"`ait-build serve` needs PyTriton ({exc.name or exc}): "
                       f"{INSTALL_HINT}") from None
    if int(np.__version__.split(".")[0]) >= 2:
        raise AitError(f"PyTriton {metadata.version('nvidia-pytriton')} needs NumPy < 2 and this "
                       f"environment has NumPy {np.__version__}: install ait-build[serve] in a "
                       f"virtual environment of its own ({INSTALL_HINT} there)")
    return decorators, model_config, triton


def load(build_dirs, options: ServeOptions) -> list:
    """A Served per build folder; two builds of one model name are an error (Triton's names
    are unique). On an error, the Models loaded so far are closed."""
    served, names = [], {}
    try:
        for build_dir in build_dirs:
            served.append(_load_one(build_dir, options, names))
    except BaseException:
        close(served)
        raise
    return served


def _load_one(build_dir: str, options: ServeOptions, names: dict) -> Served:
    first = Model(build_dir)  # checks the folder is a build before anything else starts
    try:
        layout = layout_of(first.manifest)
        if layout.name in names:
            raise AitError(f"{build_dir} and {names[layout.name]} are both model "
                           f"'{layout.name}'; Triton serves one model per name")
    except BaseException:
        first.close()
        raise
    names[layout.name] = build_dir
    first.close()  # it checked the build; each instance below gets its own Model
    if first.manifest.device == "host":
        return Served(layout, _models(build_dir, [None] * options.instances), "cpu")
    devices = options.devices if options.devices is not None else tuple(
        range(device_control(first.manifest).device_count()))
    if not devices:
        raise AitError(f"{build_dir}: no GPU to serve it on")
    instances = [d for d in devices for _ in range(options.instances)]
    return Served(layout, _models(build_dir, instances), "GPUs " + ", ".join(map(str, devices)))


def _models(build_dir: str, devices: list) -> list:
    """A Model per entry of `devices` (None: a host build's); all closed if one fails."""
    models = []
    try:
        for device in devices:
            models.append(Model(build_dir) if device is None else Model(build_dir, device=device))
    except BaseException:
        for model in models:
            model.close()
        raise
    return models


def close(served: list) -> None:
    for item in served:
        for model in item.models:
            model.close()


def infer_function(model: Model, batch_decorator, batched: bool):
    """The callable one Triton instance runs: requests' inputs (concatenated along the batch
    axis by PyTriton's @batch when batched) through Model.run."""
    def infer(**inputs):
        return model.run(inputs)
    if batched:
        return batch_decorator(infer)

    def one_by_one(requests):
        return [infer(**request.data) for request in requests]
    return one_by_one


def serve(build_dirs, options: ServeOptions, report=print) -> None:
    """Serves the builds until SIGINT or SIGTERM; `report` gets one line per model and at exit."""
    served = load(build_dirs, options)  # the folders first: a wrong path needs no PyTriton
    try:
        decorators, model_config, triton = pytriton()
        _find_own_libpython()
        config = triton.TritonConfig(http_port=options.http_port, grpc_port=options.grpc_port,
                                     metrics_port=options.metrics_port,
                                     exit_timeout_secs=options.exit_timeout_s)
        # Triton.serve() stops cleanly on KeyboardInterrupt; SIGINT too, for a server started in
        # the background by a shell, which starts it with SIGINT ignored
        for stop_signal in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stop_signal, _interrupt)
        with triton.Triton(config=config) as server:
            for item in served:
                _bind(server, item, options, decorators, model_config)
                report(_describe(item, options))
            report(f"HTTP on :{options.http_port}, gRPC on :{options.grpc_port}, metrics on "
                   f":{options.metrics_port}; SIGINT or SIGTERM stops")
            server.serve()
    finally:
        close(served)
    report("stopped")


def _bind(server, item: Served, options: ServeOptions, decorators, model_config) -> None:
    layout = item.layout
    tensors = [[model_config.Tensor(name=t.name, dtype=t.dtype, shape=t.shape) for t in group]
               for group in (layout.inputs, layout.outputs)]
    batcher = model_config.DynamicBatcher(max_queue_delay_microseconds=options.max_queue_delay_us,
                                          preferred_batch_size=list(layout.preferred_batch_sizes))
    config = model_config.ModelConfig(batching=layout.batched, max_batch_size=layout.max_batch_size,
                                      batcher=batcher)
    functions = [infer_function(m, decorators.batch, layout.batched) for m in item.models]
    try:
        server.bind(model_name=layout.name, infer_func=functions,
                    inputs=tensors[0], outputs=tensors[1], config=config, strict=True)
    except Exception as exc:  # Triton's load error: a traceback of the Python backend's
        raise AitError(f"Triton could not load model '{layout.name}': "
                       f"{_last_error_line(str(exc))} (the server's log above has the rest)"
                       ) from None


def _last_error_line(text: str) -> str:
    """'...Traceback...\nConnectionRefusedError: [Errno 111] ...\nAt: ...' -> the error line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", line)]
    return (errors or lines or ["(no message)"])[-1]


def _describe(item: Served, options: ServeOptions) -> str:
    layout = item.layout
    batching = (f"dynamic batching up to {layout.max_batch_size} (preferred "
                f"{', '.join(map(str, layout.preferred_batch_sizes))}, queue delay "
                f"{options.max_queue_delay_us} us)" if layout.batched else
                f"no batching: {layout.unbatched_reason}")
    count = len(item.models)
    return (f"{layout.name}: {count} instance{'s' if count != 1 else ''} on {item.where}, "
            f"{batching}; POST /v2/models/{layout.name}/infer")


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _find_own_libpython() -> None:
    """The server's Python backend stub links libpython<version>.so and finds it on the loader's
    path; where this interpreter's own library is not the system's (pyenv, conda), the stub would
    load another patch release's library under this one's standard library and fail, so this
    interpreter's library folder goes first on the path the server inherits."""
    folder, soname = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")
    if not folder or not soname or not os.path.exists(os.path.join(folder, soname)):
        return
    paths = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    if folder not in paths:
        os.environ["LD_LIBRARY_PATH"] = os.pathsep.join([folder, *paths])
