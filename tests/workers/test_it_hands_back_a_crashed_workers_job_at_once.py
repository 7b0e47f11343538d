"""A cluster hands back the job of a worker of its own that ended on a signal
or an error within one cycle of its guard loop (half a second), counting the
death against the job; a worker that exited normally (recycled) is left to
the sweep, whose grace lets the monitor acknowledge its last result first."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from codex.core.workers import hooks as worker_hooks
from codex.core.workers.cluster_recovery import ClusterKeeper


@dataclass
class FakeProcess:
    pid: int
    exitcode: int | None = None

    def is_alive(self) -> bool:
        return self.exitcode is None


@dataclass
class FakeSentinel:
    pool: list[FakeProcess]
    task_queue: None = None  # no queue lock to watch


@dataclass
class FakeBroker:
    claim: str = "c1"
    running: set[int] = field(default_factory=set)
    handed: list[tuple] = field(default_factory=list)

    def started_pids(self, claim: str) -> set[int]:
        return set(self.running)

    def hand_back(self, claim, *, pids=None, unstarted=True, counted=False) -> int:
        self.handed.append((claim, set(pids), unstarted, counted))
        return len(pids)


@pytest.fixture
def released(monkeypatch) -> list[str]:
    """The workers whose task leases were freed (the apps' dead-worker
    handlers, codex.core.workers.hooks)."""
    freed: list[str] = []
    monkeypatch.setattr(
        worker_hooks, "_DEAD_WORKER", [lambda holder, reason: freed.append(holder)]
    )
    return freed


def keeper_with(*processes: FakeProcess, running: set[int]) -> ClusterKeeper:
    keeper = ClusterKeeper(FakeBroker(running=running), FakeSentinel(list(processes)))
    keeper.host = "here"
    keeper._hand_back_crashed_workers()  # sees the pool as it is
    return keeper


def test_a_killed_worker_has_its_job_handed_back_counted(released):
    killed, idle = FakeProcess(101), FakeProcess(102)
    keeper = keeper_with(killed, idle, running={101})
    # django-q2 drops the dead worker from its pool before the next cycle.
    killed.exitcode = -9
    keeper.sentinel.pool.remove(killed)

    keeper._hand_back_crashed_workers()

    assert keeper.broker.handed == [("c1", {101}, False, True)]
    assert released == ["worker:here:101"]
    keeper._hand_back_crashed_workers()
    assert len(keeper.broker.handed) == 1, "handed back once"


def test_a_recycled_worker_is_left_to_the_sweep(released):
    recycled = FakeProcess(201)
    keeper = keeper_with(recycled, running={201})
    recycled.exitcode = 0
    keeper.sentinel.pool.remove(recycled)

    keeper._hand_back_crashed_workers()

    assert keeper.broker.handed == []
    assert released == []
