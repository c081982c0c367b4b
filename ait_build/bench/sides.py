"""The cpu bench's sides in processes of their own, taking turns.

Thread pools of several runtimes in one process fight over the cores while idle (on 2 cores,
PyTorch ran 9x slower after our library had run), so by default each side runs in its own
process (`python -m ait_build.bench.sides ...`). The processes load their model at once, then the
parent gives them turns: warm-up calls one side after the other, then, until every side has its
`runs` timings, a turn of up to TURN_RUNS timed calls per side in a fixed order. Load from other
work on a shared machine (bursts of seconds on our 2-core CI machine) so falls on every side
alike, instead of on whichever side was timed while it lasted.

Before a turn the parent waits SETTLE_S, long enough for the previous side's pool to stop
spinning (ONNX Runtime's workers used ~45 ms of CPU after a run on that machine), and the side
makes one untimed call first, so that a turn times the back-to-back calls of a warm pool, as a
plain loop would.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

from ait_build.bench.competitors import SIDES, Context
from ait_build.errors import AitError
from ait_build.ir.weights import save_safetensors
from ait_build.runtime.inputs import load_arrays

TURN_RUNS = 3
SETTLE_S = 0.1

# PyTorch's OpenMP threads may spin between parallel regions (unless the user set the policy):
# on small VMs waking sleeping threads costs milliseconds per region (8 ms each on our 2-core
# machine: PyTorch's ResNet-50 ran 260 ms instead of 97). GOMP_SPINCOUNT bounds the spin (~45 ms
# of CPU there) so that the idle PyTorch process stops taking a core before the next side's turn;
# ACTIVE alone spins for ever. Not for our library, whose kernels run on its own pool, nor ONNX
# Runtime, which has its own too: in its process the only OpenMP threads are PyTorch's from the
# export, and spinning they halved ONNX Runtime's speed.
SIDE_ENV = {"torch": {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": "2000000"}}


def _signal(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class SideProcess:
    """One side (`ait_build`, `torch`, `onnxruntime`) loaded in a child process that times its
    calls when asked. Messages are JSON lines: the parent writes to the child's stdin, the child
    answers on a copy of its stdout (its own stdout goes to stderr, so that a library's prints
    cannot garble the answers)."""

    def __init__(self, ctx, side: str, folder: str):
        self.side, self.folder = side, folder
        self.env = dict(os.environ)
        for key, value in SIDE_ENV.get(side, {}).items():
            self.env.setdefault(key, value)
        cmd = [sys.executable, "-m", "ait_build.bench.sides", "--side", side, "--spec", ctx.spec,
               "--twin", ctx.twin_name, "--build-dir", ctx.build_dir, "--dir", folder]
        self.log = open(os.path.join(folder, f"{side}.stderr"), "w+", encoding="utf-8")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, env=self.env)
        self.skipped = None

    def ask(self, message: dict) -> dict:
        try:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except OSError:  # the child is gone: its stderr says why
            line = ""
        if not line:
            code = self.proc.wait()
            self.log.seek(0)
            said = self.log.read().strip()
            if code < 0:  # killed: a crash in the library (SIGSEGV, SIGBUS) says nothing itself
                said = "\n".join(filter(None, [said, f"(killed by {_signal(-code)})"]))
            raise AitError(f"bench side '{self.side}' failed:\n{said}")
        return json.loads(line)

    def ready(self) -> None:
        """Waits for the child to load its side; a missing package leaves it `skipped`."""
        self.skipped = self.ask({"ready": True}).get("skipped")

    def warm(self, calls: int) -> None:
        self.ask({"warm": calls})

    def turn(self, calls: int) -> list:
        return self.ask({"turn": calls})["times"]

    def finish(self) -> dict:
        """The side's result (its metadata, and its outputs unless skipped); ends the child."""
        self.ask({"done": True})
        self.close()
        with open(os.path.join(self.folder, f"{self.side}.json"), encoding="utf-8") as fh:
            result = json.load(fh)
        outputs = os.path.join(self.folder, f"{self.side}.safetensors")
        if os.path.exists(outputs):
            result["outputs"] = load_arrays(outputs)
        result["env"] = {k: self.env.get(k) for k in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
        return result

    def close(self, wait: float = 30) -> None:
        """Ends the child: at the end of its input it exits within `wait` seconds, or is killed."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=wait)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()


def take_turns(sides: dict, warmup: int, runs: int, settle: float = SETTLE_S) -> dict:
    """name -> handle with warm(n) and turn(n)  =>  name -> `runs` call times (seconds)."""
    for handle in sides.values():
        handle.warm(warmup)
    times: dict = {name: [] for name in sides}
    done = 0
    while sides and done < runs:
        calls = min(TURN_RUNS, runs - done)
        for name, handle in sides.items():
            time.sleep(settle)
            times[name] += handle.turn(calls)
        done += calls
    return times


def time_sides_in_processes(ctx, sides: list, inputs: dict, warmup: int, runs: int) -> dict:
    """side -> {'times', 'outputs', ...} or {'skipped'}: each side in its own process, taking
    turns (the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        save_safetensors(inputs, os.path.join(tmp, "inputs.safetensors"))
        handles = {}
        try:
            for side in sides:  # the children load at the same time
                handles[side] = SideProcess(ctx, side, tmp)
            for handle in handles.values():
                handle.ready()
            timed = {n: h for n, h in handles.items() if h.skipped is None}
            times = take_turns(timed, warmup, runs)
            results = {n: h.finish() for n, h in handles.items()}
        finally:  # after an error, children still running are killed
            for handle in handles.values():
                handle.close(wait=0)
    for name, result in results.items():
        if name in times:
            result["times"] = times[name]
    return results


def serve(argv=None) -> int:
    """The child: `python -m ait_build.bench.sides --side NAME ...` answers the parent's
    messages (SideProcess) until it says done, then writes NAME.json and NAME.safetensors (the
    side's outputs) into --dir."""
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    p = argparse.ArgumentParser()
    for flag in ("--side", "--spec", "--twin", "--build-dir", "--dir"):
        p.add_argument(flag, required=True)
    a = p.parse_args(argv)
    ctx = Context(a.spec, a.twin, a.build_dir)
    prepared = None
    for line in sys.stdin:
        message = json.loads(line)
        answer: dict = {}
        if "ready" in message:
            prepared = SIDES[a.side](ctx, load_arrays(os.path.join(a.dir, "inputs.safetensors")))
            answer = {"skipped": prepared["skipped"]} if "skipped" in prepared else {}
        elif "warm" in message:
            for _ in range(message["warm"]):
                prepared["call"]()
        elif "turn" in message:
            prepared["call"]()  # untimed: the pool and caches warm again after the pause
            answer["times"] = []
            for _ in range(message["turn"]):
                start = time.perf_counter()
                prepared["call"]()
                answer["times"].append(time.perf_counter() - start)
        elif "done" in message:
            prepared.pop("call", None)
            outputs = prepared.pop("outputs", None)
            if outputs is not None:
                save_safetensors({k: np.asarray(v) for k, v in outputs.items()},
                                 os.path.join(a.dir, f"{a.side}.safetensors"))
            with open(os.path.join(a.dir, f"{a.side}.json"), "w", encoding="utf-8") as fh:
                json.dump(prepared, fh)
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
        if "done" in message:
            break
    ctx.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(serve())
    except AitError as exc:  # a missing build, a bad spec: the message, for the parent's error
        print(exc, file=sys.stderr)
        sys.exit(1)
