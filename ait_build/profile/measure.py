"""Running profiling harnesses: problems in on stdin, one JSON line per (problem, candidate) out
(templates/cuda/profile.cu.j2).

A candidate that kills its process (a trap, an illegal address: the CUDA context is lost) is
recorded as failed and a new process goes on with the candidates still to run. Every result
goes to a journal (build/<target>/profile/journal.jsonl) keyed by the harness's source digest,
so an interrupted profile resumes where it stopped and a finished one is not measured again
unless its kernels change.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from queue import Empty, Queue

from ait_build.errors import AitError
from ait_build.profile.journal import Journal, Result  # noqa: F401 (measure's types)

# relative L2 error against the heuristic's output above which a candidate is wrong, by dtype
# (both sides round once to the storage type; float32 runs 3xTF32 on both)
TOLERANCE = {"float16": 1e-2, "bfloat16": 3e-2, "float32": 1e-4}


def tolerance(family: str) -> float:
    """TOLERANCE of a profile family's dtype (its readable identity's second word)."""
    return TOLERANCE.get(family.split()[1], 1e-2)

HEURISTIC = "heuristic"
# a harness silent this long is stuck (a candidate that hangs the GPU): it is killed, and the
# candidate it was running recorded as failed
SILENCE_TIMEOUT_S = 120


def problem_line(pid: str, problem, indices: list) -> str:
    values = []
    for _, value in problem.values:
        values.append(repr(float(value)) if isinstance(value, float) else str(int(value)))
    flags = [str(int(present)) for _, present in problem.tunable.operands]
    return " ".join([pid, *values, *flags, str(len(indices)), *map(str, indices)])


def measure(harness, problems: list, journal: Journal, device: dict | None = None,
            echo=print) -> dict:
    """key -> {config name: Result} for every problem, running what the journal lacks.
    `device` receives the harness's device line ({'device': name, 'sm_count': n})."""
    names = [c.name for c in harness.candidates]
    todo = {}  # pid -> (problem, [candidate indices still to run])
    for i, problem in enumerate(problems):
        done = journal.results(harness.digest, problem.key)
        allowed = {c.name for c in problem.tunable.candidates}
        left = [j for j, n in enumerate(names) if n in allowed and n not in done]
        if left or HEURISTIC not in done:
            todo[f"p{i}"] = (problem, left)
    while todo:
        progress = _run_once(harness, todo, names, journal, device, echo)
        if not progress:
            break
    return {p.key: journal.results(harness.digest, p.key) for p in problems}


def _lines(program: str, text: str) -> tuple:
    """(iterator over the harness's output lines, a function giving its exit code once the
    lines are read): the process is killed after SILENCE_TIMEOUT_S without a line."""
    try:
        proc = subprocess.Popen([program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
    except OSError as exc:
        raise AitError(f"cannot run the harness {program}: {exc.strerror}") from None
    queue: Queue = Queue()

    def pump():
        try:
            proc.stdin.write(text)
            proc.stdin.close()
        except OSError:
            pass  # it died early; its output says how far it got
        for line in proc.stdout:
            queue.put(line)
        queue.put(None)
    threading.Thread(target=pump, daemon=True).start()
    state = {"timeout": False}

    def lines():
        while True:
            try:
                line = queue.get(timeout=SILENCE_TIMEOUT_S)
            except Empty:
                state["timeout"] = True
                proc.kill()
                return
            if line is None:
                return
            yield line

    def code():
        rc = proc.wait()
        return "no output for %d s" % SILENCE_TIMEOUT_S if state["timeout"] else rc
    return lines(), code


def _run_once(harness, todo: dict, names: list, journal: Journal, device, echo) -> bool:
    """One harness process over what is left in `todo` (updated in place); False when it made
    no progress at all."""
    program = os.path.join(harness.folder, harness.program)
    text = "".join(problem_line(pid, p, left) + "\n" for pid, (p, left) in todo.items())
    started, progress = None, False
    lines, code = _lines(program, text)
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if "device" in row and device is not None:
            device.update(row)
        if "fatal" in row and started is None:
            raise AitError(f"profiling harness {harness.group}: {row['fatal']} (is there a CUDA GPU?)")
        if "start" in row:
            started = (row["start"], row["config"])
            continue
        if "problem" not in row or row["problem"] not in todo:
            continue
        pid, index = row["problem"], row["config"]
        problem, left = todo[pid]
        config = HEURISTIC if index < 0 else names[index]
        result = Result(config, row.get("us"), row.get("rel_err"), str(row.get("error", "")))
        if row.get("nonfinite"):
            result.error = f"{int(row['nonfinite'])} non-finite outputs"
        journal.add(harness.digest, problem.key, result)
        progress = True
        if index >= 0 and index in left:
            left.remove(index)
        if index < 0 and result.error:  # no reference output: the problem cannot be measured
            left.clear()
        started = None
    code = code()
    if code != 0 and started is not None and started[0] in todo:  # this candidate killed it
        pid, index = started
        problem, left = todo[pid]
        config = HEURISTIC if index < 0 else names[index]
        journal.add(harness.digest, problem.key, Result(config, error=f"the process died ({code})"))
        echo(f"  {problem.describe()}: {config} ended the process ({code}); going on without it")
        progress = True
        if index < 0:
            left.clear()
        elif index in left:
            left.remove(index)
    for pid in [pid for pid, (_, left) in todo.items() if not left]:
        del todo[pid]
    if code != 0 and not progress:
        raise AitError(f"profiling harness {harness.group} failed ({code}) before measuring anything")
    return progress
