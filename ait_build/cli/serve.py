"""`ait-build serve`: built models behind Triton Inference Server (HTTP, gRPC, metrics) through
PyTriton, with dynamic batching over the model's batch dim (docs/serve.md)."""

from __future__ import annotations

import argparse

from ait_build.cli.args import bounded_int, nonnegative_int, positive_int
from ait_build.errors import AitError
from ait_build.serve.binding import ServeOptions, serve

MAX_INSTANCES = 256  # model instances per device: each holds its own workspaces

DESCRIPTION = ("Serve built models through Triton Inference Server (PyTriton): HTTP, gRPC and "
               "metrics endpoints, dynamic batching up to the model's batch dim max, N instances "
               "per device. Stops cleanly on SIGINT or SIGTERM. Needs the serve extra: "
               "pip install 'ait-build[serve]'.")
EXAMPLES = ["ait-build serve build/cpu/mlp",
            "ait-build serve build/h200/resnet50 build/h200/bert_base --devices 0,1 --instances 2",
            "ait-build serve build/cpu/mlp --http-port 9000 --grpc-port 9001 --metrics-port 9002"]


def port(text: str) -> int:
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be a port (1-65535), got {value}")
    return value


def device_list(text: str) -> tuple | None:
    """'all' -> None (every visible GPU); '0,1' -> (0, 1)."""
    if text.strip() == "all":
        return None
    values = [nonnegative_int(part.strip()) for part in text.split(",") if part.strip()]
    if not values or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"expected 'all' or distinct GPU indices such as 0,1, "
                                         f"got '{text}'")
    return tuple(values)


def add_arguments(p) -> None:
    defaults = ServeOptions()
    p.add_argument("build_dirs", nargs="+", metavar="BUILD_DIR",
                   help="build folders, e.g. build/cpu/mlp (each served under its model's name)")
    p.add_argument("--http-port", type=port, default=defaults.http_port,
                   help=f"HTTP/REST port (default {defaults.http_port})")
    p.add_argument("--grpc-port", type=port, default=defaults.grpc_port,
                   help=f"gRPC port (default {defaults.grpc_port})")
    p.add_argument("--metrics-port", type=port, default=defaults.metrics_port,
                   help=f"Prometheus metrics port (default {defaults.metrics_port})")
    p.add_argument("--instances", type=bounded_int(MAX_INSTANCES), default=defaults.instances,
                   metavar="N",
                   help="model instances per device (per model for cpu builds; default 1)")
    p.add_argument("--max-queue-delay-us", type=nonnegative_int, metavar="US",
                   default=defaults.max_queue_delay_us,
                   help="how long the dynamic batcher waits to fill a batch (default "
                   f"{defaults.max_queue_delay_us})")
    p.add_argument("--devices", type=device_list, default=None, metavar="all|0,1,...",
                   help="the GPUs GPU builds are served on (default: all visible)")
    p.add_argument("--exit-timeout", type=nonnegative_int, default=defaults.exit_timeout_s,
                   metavar="S", help="seconds Triton waits for open requests and connections at "
                   f"exit (default {defaults.exit_timeout_s})")


def run(args) -> int:
    ports = [args.http_port, args.grpc_port, args.metrics_port]
    if len(set(ports)) != 3:
        raise AitError(f"--http-port, --grpc-port and --metrics-port must differ, got "
                       f"{', '.join(map(str, ports))}")
    options = ServeOptions(http_port=args.http_port, grpc_port=args.grpc_port,
                           metrics_port=args.metrics_port, instances=args.instances,
                           max_queue_delay_us=args.max_queue_delay_us, devices=args.devices,
                           exit_timeout_s=args.exit_timeout)
    serve(args.build_dirs, options, report=lambda line: print(line, flush=True))
    return 0
