"""Model fault storm: 30 % of model calls fail, every task still completes.

Live workers (two `manage.py qcluster` subprocesses of two workers each) run
24 tasks through all six phases with the real AgentPhaseRunner and anthropic
SDK against tests/live_pipeline.py's scripted model, wrapped in `FaultStorm`:
for each request it decides, from a seeded hash of (task number, phase, turn,
how many times that turn was asked before), whether to fail it, and how:
429 with retry-after 1 s or 3 s, 529, 500 (no retry-after), or a connection
closed without an answer. The choice does not depend on timing or on which
worker asks, so the whole run's requests are known in advance.

How the product rides it out (agents/runtime.py): a transient error is
retried in place, in the same conversation, after the server's retry-after
or a capped jittered backoff, at most CODEX_MODEL_INLINE_RETRIES (6) times per
run and never waiting longer than CODEX_MODEL_INLINE_WAIT_SECONDS (2 here). A
429 asking for 3 s is longer than that: the run ends, the task is blocked
until the retry-after has passed, resume_due_tasks (the scheduler's job,
driven here every half second instead of every minute) puts it back, and the
phase's run goes on from its checkpoint (agents/checkpoints.py): the turn
the fault interrupted is asked again, the turns before it are not.

What is checked:
- every task completes, once, its pull request opened and merged once;
- retry-after is honoured: after each 429, the next request of that task's
  phase arrives no earlier than retry-after seconds later (whether retried in
  place or after the requeue);
- no retry storm: the requests the stub received are exactly the ones
  `expected_requests` derives from the seeded faults and the retry rules
  above (per task, phase and turn), so nothing retried more often than the
  rules allow (no SDK retries, no phase run twice). The rules also give a
  hard bound, asserted too: a run sends at most turns + 6 requests, a phase
  runs at most CODEX_MAX_RETRIES + 1 = 6 times, so a task sends at most
  6 x (8 + 6 x 6) = 264; without faults it sends 8, and with 30 % failing
  about 8 / 0.7.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

from codex.events.models import Event, EventKind
from codex.tasks.jobs import resume_due_tasks
from codex.tasks.models import Status
from tests.live_pipeline import (  # noqa: F401 (live_clusters is a fixture)
    PHASES,
    ScriptedAgent,
    conversation,
    conversation_key,
    feature_change,
    live_clusters,
    live_pipeline,
)
from tests.model_stub import Reply, dropped, error
from tests.workers.live.helpers import assert_each_completed_and_merged_once

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

TASKS = 24
FAULT_RATE = 0.3
SEED = 529
KINDS = ("429", "529", "500", "drop")
RETRY_AFTERS = (1, 3)  # seconds: 1 is waited out in place, 3 requeues the step
INLINE_RETRIES = 6
INLINE_WAIT = 2
MAX_RETRIES = 5  # CODEX_MAX_RETRIES: runs of one phase after the first
TURNS = {phase: len(conversation(feature_change("FEAT-0"))[phase]) for phase in PHASES}
WORKER_ENV = {
    "CODEX_MODEL_INLINE_RETRIES": str(INLINE_RETRIES),
    "CODEX_MODEL_INLINE_WAIT_SECONDS": str(INLINE_WAIT),
    "CODEX_MAX_RETRIES": str(MAX_RETRIES),
    # Requeues of errors without retry-after (a run out of in-place retries).
    "CODEX_RETRY_BACKOFF_BASE_SECONDS": "1",
    "CODEX_RETRY_BACKOFF_MAX_SECONDS": "4",
    "CODEX_JOB_TIMEOUT": "45",
    "CODEX_JOB_RETRY": "50",
}


@dataclass(frozen=True)
class Fault:
    kind: str
    retry_after: int | None = None

    def reply(self) -> Reply:
        if self.kind == "drop":
            return dropped()
        return error(int(self.kind), "fault storm", retry_after=self.retry_after)


def decide(number: int, phase: str, turn: int, asked_before: int) -> Fault | None:
    """The seeded fault (or None) for this request of task `number`."""
    rng = random.Random(f"{SEED}:{number}:{phase}:{turn}:{asked_before}")
    if rng.random() >= FAULT_RATE:
        return None
    kind = rng.choice(KINDS)
    return Fault(kind, rng.choice(RETRY_AFTERS) if kind == "429" else None)


def expected_requests(number: int) -> tuple[Counter, int]:
    """The requests task `number` makes under the retry rules (module
    docstring), as {(phase, turn): count}, and how many runs end in a
    requeue."""
    asked: Counter = Counter()
    requeues = 0
    for phase in PHASES:
        runs, turn = 0, 0
        while True:
            runs += 1
            assert runs <= MAX_RETRIES + 1, f"task {number} {phase} would escalate"
            # A requeued run resumes at the turn it stopped on (its checkpoint).
            retried, finished = 0, True
            while turn < TURNS[phase]:
                fault = decide(number, phase, turn, asked[phase, turn])
                asked[phase, turn] += 1
                if fault is None:
                    turn += 1
                elif (fault.retry_after or 0) > INLINE_WAIT or retried >= (
                    INLINE_RETRIES
                ):
                    finished = False
                    break
                else:
                    retried += 1
            if finished:
                break
            requeues += 1
    return asked, requeues


@dataclass
class Seen:
    at: float
    task: str
    phase: str
    turn: int
    fault: Fault | None


class FaultStorm:
    """A responder: the scripted agent, with seeded faults in front of it."""

    def __init__(self, agent: ScriptedAgent) -> None:
        self.agent = agent
        self.numbers: dict[str, int] = {}  # task id -> its number, set by the test
        self.asked: Counter = Counter()
        self.seen: list[Seen] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        task, phase, turn = conversation_key(body)
        with self.lock:
            before = self.asked[task, phase, turn]
            self.asked[task, phase, turn] += 1
            fault = decide(self.numbers[task], phase, turn, before)
            self.seen.append(Seen(time.monotonic(), task, phase, turn, fault))
        return fault.reply() if fault else self.agent(body)


def test_every_task_completes_through_a_storm_of_model_faults(
    live_clusters,  # noqa: F811
    tmp_path,
):
    storms: list[FaultStorm] = []

    def wrap(agent: ScriptedAgent) -> FaultStorm:
        storms.append(FaultStorm(agent))
        return storms[0]

    started = time.monotonic()
    with live_pipeline(tmp_path / "live", wrap=wrap) as pipeline:
        storm = storms[0]
        ids = pipeline.create_tasks(TASKS, title="Storm feature")
        storm.numbers = {task_id: number for number, task_id in enumerate(ids)}
        env = pipeline.worker_env(workers=2, **WORKER_ENV)
        for _ in range(2):
            live_clusters.start(env, wait=False)
        counts = pipeline.wait_settled(
            ids, 600, clusters=live_clusters, tick=resume_due_tasks
        )
        seconds = time.monotonic() - started
        forge = pipeline.forge_counts(ids)
        received = len(pipeline.stub.requests)

    faults = Counter(s.fault.kind for s in storm.seen if s.fault)
    print(
        f"\nfault storm: {TASKS} tasks settled in {seconds:.0f} s; {received} model "
        f"requests, {sum(faults.values())} faults {dict(faults)}"
    )

    # Every task completed, once, merged once.
    assert counts == Counter({Status.COMPLETED: TASKS}), (
        counts,
        pipeline.not_completed(ids),
    )
    assert_each_completed_and_merged_once(ids, forge)

    # The storm was one: about 30 % of the calls, every kind of fault.
    assert set(faults) == set(KINDS)
    assert 0.2 < sum(faults.values()) / len(storm.seen) < 0.4
    assert received == len(storm.seen)

    # Retry-after honoured: the next request of the same task's phase comes
    # no earlier than retry-after after the 429.
    by_phase: dict[tuple[str, str], list[Seen]] = {}
    for seen in storm.seen:
        by_phase.setdefault((seen.task, seen.phase), []).append(seen)
    honoured = 0
    for requests in by_phase.values():
        requests.sort(key=lambda s: s.at)
        for this, following in zip(requests, requests[1:], strict=False):
            if this.fault and this.fault.retry_after:
                waited = following.at - this.at
                assert waited >= this.fault.retry_after, (this, following, waited)
                honoured += 1
    assert honoured == faults["429"]

    # No retry storm: exactly the requests the rules allow, turn by turn.
    total_requeues = 0
    for task_id, number in storm.numbers.items():
        expected, requeues = expected_requests(number)
        total_requeues += requeues
        actual = Counter(
            {
                (phase, turn): n
                for (t, phase, turn), n in storm.asked.items()
                if t == task_id
            }
        )
        assert actual == expected, (task_id, number)
        assert sum(actual.values()) <= (MAX_RETRIES + 1) * (
            sum(TURNS.values()) + len(PHASES) * INLINE_RETRIES
        )
    # Each requeue went through blocked and back, waiting out its delay.
    blocked = Event.objects.filter(
        task__task_id__in=ids,
        kind=EventKind.TRANSITION,
        field="status",
        target=Status.BLOCKED,
    ).count()
    assert blocked == total_requeues
    assert total_requeues > 0, "the storm never exercised the requeue path"
