"""Progress lines of a build: `[k/n] compiling x.cu (h200/mlp)`, and the time of slow steps.

n is every step of the selected models, fixed for the whole build. k is the step's place among
them: the steps numbered before it, those SCons found up to date and skipped, and this one.
SCons finds a step up to date only when it reaches it (a generated source may come out
unchanged), so k jumps over the steps it skips; the last step of a build reads [n/n]. An
incremental build that recompiles one kernel prints [1/7] generating, [5/7] compiling, [7/7]
linking. A step that takes SLOW_S seconds or more says how long it took when it ends (a CUTLASS
kernel compiles for minutes).
"""

from __future__ import annotations

import sys
import threading
import time

import SCons.Action
import SCons.Node

SLOW_S = 3.0


class Progress:
    """PRINT_CMD_LINE_FUNC of the build environment. `add_step(node)` registers one target node
    of each step (a generation, a compile, a link); `watch(env, node)` reports its time."""

    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.steps: list = []
        self.done = 0
        self.seen: dict = {}  # executor id -> (step number, start time, text)
        self.lock = threading.Lock()

    def add_step(self, env, node) -> None:
        self.steps.append(node)
        env.AddPostAction(node, StepEnd(self))

    def total(self) -> int:
        return max(len(self.steps), self.done + self.skipped())

    def skipped(self) -> int:
        """Steps SCons reached and found up to date (they print nothing)."""
        return sum(1 for node in self.steps if node.get_state() == SCons.Node.up_to_date)

    def __call__(self, text, target, source, env):
        # A step with several targets (the generation) may print one cache retrieval per file,
        # all under the step's number. k: the steps numbered before, those skipped, this one.
        key = id(target[0].get_executor()) if target else None
        with self.lock:
            if key is None or key not in self.seen:
                self.done += 1
                self.seen[key] = (self.done + self.skipped(), time.monotonic(), text)
            self._print(f"[{self.seen[key][0]}/{self.total()}] {text}")

    def step_ended(self, target, source, env):
        key = id(target[0].get_executor())
        with self.lock:
            if key not in self.seen:
                return 0
            number, start, text = self.seen[key]
            elapsed = time.monotonic() - start
            if elapsed >= SLOW_S:
                self._print(f"[{number}/{self.total()}] {text}: {elapsed:.1f} s")
        return 0

    def _print(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()


class StepEnd(SCons.Action.FunctionAction):
    """The post-action that reports a step's time. It prints no line of its own and adds
    nothing to the step's build signature, so cache entries stay what they were."""

    def __init__(self, progress: Progress):
        super().__init__(progress.step_ended, {"strfunction": None})

    def get_presig(self, target, source, env, executor=None):
        return b""

    def get_implicit_deps(self, target, source, env, executor=None):
        return []
