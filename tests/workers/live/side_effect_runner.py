"""A phase runner for live `qcluster` subprocesses: happy-path results, a
simulated outside side effect in implementation ("create a pull request") and in
release ("merge"), both through `codex.core.store.side_effects.perform_once`, and a
configurable sleep that gives the tests a window to kill the worker.

Configured by environment variables (the subprocess reads them per call):

- CODEX_TEST_SIDE_EFFECT_LOG: the "outside system": one line per side effect
  actually performed (its key). The lookup reads this file, as a forge lookup
  would ask GitHub "is there already a pull request for this branch?".
- CODEX_TEST_RUN_LOG: one JSON line when `run(task)` starts and one when it
  returns, with the task, phase, worker pid and wall-clock time, so the tests
  can check that no phase ran twice at once.
- CODEX_TEST_SLEEP_SECONDS (default 0) and CODEX_TEST_SLEEP_PHASES (comma
  separated, default "implementation"): how long to sleep in which phases.
- CODEX_TEST_SLEEP_WHERE: "action" (default) sleeps inside the side effect,
  after it took effect outside but before perform_once records it as done, the
  worst moment to die; "after" sleeps once the phase's side effect is recorded.
  Phases without a side effect sleep at the end either way.
- CODEX_TEST_DIE_PHASES (comma separated, default none): phases whose run
  SIGKILLs its own worker right after it starts, every time (a step that
  crashes its worker: out of memory, a segfault in a library).
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid

from codex.core.store.side_effects import perform_once
from tests.phase_runner import default_result

SIDE_EFFECT_LOG = "CODEX_TEST_SIDE_EFFECT_LOG"
RUN_LOG = "CODEX_TEST_RUN_LOG"
SLEEP_SECONDS = "CODEX_TEST_SLEEP_SECONDS"
SLEEP_PHASES = "CODEX_TEST_SLEEP_PHASES"
SLEEP_WHERE = "CODEX_TEST_SLEEP_WHERE"
DIE_PHASES = "CODEX_TEST_DIE_PHASES"

SIDE_EFFECTS = {"implementation": "pr:create", "release": "pr:merge"}


def side_effect_key(task_id: str, phase: str) -> str:
    """The stable key of the phase's side effect (also the line in the log)."""
    return f"test:{SIDE_EFFECTS[phase]}:{task_id}"


def append_line(path: str, line: str) -> None:
    """Append one line with a single O_APPEND write: whole lines, even with
    several processes writing and one of them killed."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def read_lines(path: str) -> list[str]:
    try:
        with open(path) as handle:
            return [line.rstrip("\n") for line in handle if line.strip()]
    except FileNotFoundError:
        return []


class SideEffectRunner:
    """tests.phase_runner.default_result, plus side effects and a chaos window."""

    def run(self, task):
        phase = str(task.phase)
        run_id = uuid.uuid4().hex
        self._record(run_id, "start", task.task_id, phase)
        if phase in os.environ.get(DIE_PHASES, "").split(","):
            os.kill(os.getpid(), signal.SIGKILL)
        sleep_seconds = self._sleep_for(phase)
        where = os.environ.get(SLEEP_WHERE, "action")
        if phase in SIDE_EFFECTS:
            self._side_effect(task, phase, sleep_seconds if where == "action" else 0.0)
            if where != "action":
                time.sleep(sleep_seconds)
        else:
            time.sleep(sleep_seconds)
        result = default_result(task)
        self._record(run_id, "end", task.task_id, phase)
        return result

    def _side_effect(self, task, phase: str, sleep_seconds: float) -> None:
        key = side_effect_key(task.task_id, phase)
        log = os.environ[SIDE_EFFECT_LOG]

        def action() -> dict:
            append_line(log, key)
            # Done outside, not yet recorded: a kill here leaves the record
            # "started", and only the lookup can tell that it took effect.
            time.sleep(sleep_seconds)
            return {"key": key, "pid": os.getpid()}

        def lookup() -> dict | None:
            return {"key": key, "found": True} if key in read_lines(log) else None

        perform_once(key, action, lookup=lookup, task=task, kind="test")

    @staticmethod
    def _sleep_for(phase: str) -> float:
        phases = os.environ.get(SLEEP_PHASES, "implementation").split(",")
        if phase not in {name.strip() for name in phases}:
            return 0.0
        return float(os.environ.get(SLEEP_SECONDS, "0") or 0)

    @staticmethod
    def _record(run_id: str, event: str, task_id: str, phase: str) -> None:
        path = os.environ.get(RUN_LOG)
        if not path:
            return
        entry = {
            "run": run_id,
            "event": event,
            "task": task_id,
            "phase": phase,
            "pid": os.getpid(),
            "t": time.time(),
        }
        append_line(path, json.dumps(entry))
