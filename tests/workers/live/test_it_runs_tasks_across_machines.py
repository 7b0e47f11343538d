"""Machines: three worker machines that share only the database and the
broker, one of them lost whole in the middle of a step
(docs/deployment.md#machine-death).

Each "machine" here is a `manage.py qcluster` with a machine name of its own
(CODEX_MACHINE_NAME) and a var folder of its own (CODEX_VAR_DIR, with its
mirrors and worktrees): nothing on one machine's disk is seen by another.
They run the real AgentPhaseRunner against tests/live_pipeline.py's scripted
model and merge into one bare repository on the local forge, on the ORM
broker and on Redis.

Once a step is running on machine "m2", m2 is SIGKILLed (every process) and
its folder deleted, as a machine that loses power and its disk. The others
cannot see its processes: they know it is gone only when its beat is older
than CODEX_CLUSTER_STALE_SECONDS (5 here, 20 by default). Then any of them
frees the dead worker's lease, hands its job back, and the step runs again on
a surviving machine, rebuilding the task's branch from the forge.

What must hold: every task completes, its pull request opened and merged
once; the task cut short runs again on another machine within the stale time
plus a few seconds; the tasks' steps ran on more than one machine (a task's
phases are not tied to the machine that started it).
"""

from __future__ import annotations

import shutil
import time
from collections import defaultdict

import pytest

from codex.events.models import Event, EventKind
from codex.tasks.jobs import resume_due_tasks
from codex.tasks.models import Status, Task
from tests.live_pipeline import live_pipeline
from tests.workers.live.brokers import REDIS_TEST_URL
from tests.workers.live.cluster import wait_for
from tests.workers.live.helpers import assert_each_completed_and_merged_once

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

MACHINES = ("m1", "m2", "m3")
VICTIM = "m2"
TASKS = 6
STALE_SECONDS = 5
CUT_PHASES = ("implementation", "verification")
# From the kill to the cut step running elsewhere: the stale time, a sweep,
# the job's way back through the queue and a worker's start of the step.
BACK_WITHIN_SECONDS = STALE_SECONDS + 15


def machine_of(holder: str) -> str:
    """The machine of a lease holder or event actor, worker:<machine>:<pid>."""
    return holder.split(":")[1] if holder.startswith("worker:") else ""


def runs_by_machine(task_ids: list[str]) -> dict[str, list[tuple[str, str]]]:
    """For each task, the (phase, machine) of every run started, in order."""
    started = (
        Event.objects.filter(
            task__task_id__in=task_ids, kind=EventKind.RUN, target="running"
        )
        .order_by("created_at", "id")
        .values_list("subject", "actor")
    )
    runs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for subject, actor in started:
        # run:<task id>:<phase>:<suffix>
        _, task_id, phase, _ = subject.split(":", 3)
        runs[task_id].append((phase, machine_of(actor)))
    return runs


def test_tasks_complete_across_machines_when_one_is_lost_whole(
    clusters, broker, tmp_path
):
    kind, queue, _ = broker
    with live_pipeline(tmp_path / "live", delay=0.3, broker=queue) as pipeline:
        ids = pipeline.create_tasks(TASKS, title="Machines feature")
        machines = {}
        for name in MACHINES:
            env = pipeline.machine_env(
                name,
                tmp_path / name,
                workers=1,
                CODEX_CLUSTER_STALE_SECONDS=str(STALE_SECONDS),
                CODEX_CLUSTER_BEAT_SECONDS="1",
                CODEX_CLUSTER_SWEEP_SECONDS="1",
            )
            if kind == "redis":
                env["REDIS_URL"] = REDIS_TEST_URL
            machines[name] = clusters.start(env, wait=False)

        # A step in progress on the victim, in a phase that works in a
        # worktree of the victim's disk: a task whose lease it holds.
        def victim_step() -> str | None:
            held = Task.objects.filter(
                task_id__in=ids,
                lease_holder__startswith=f"worker:{VICTIM}:",
                phase__in=CUT_PHASES,
            ).values_list("task_id", flat=True)
            return next(iter(held), None)

        cut = wait_for(
            victim_step,
            120,
            f"a step on {VICTIM}",
            clusters=clusters,
            interval=0.05,
        )
        machines[VICTIM].kill()
        killed_at = time.monotonic()
        assert (tmp_path / VICTIM / "worktrees").is_dir()
        shutil.rmtree(tmp_path / VICTIM)

        def running_elsewhere() -> bool:
            holder = Task.objects.filter(task_id=cut).values_list(
                "lease_holder", flat=True
            )[0]
            machine = machine_of(holder or "")
            task = Task.objects.get(task_id=cut)
            return (machine and machine != VICTIM) or task.status in (
                Status.COMPLETED,
                Status.FAILED,
            )

        wait_for(
            running_elsewhere,
            60,
            f"{cut} to run again elsewhere",
            clusters=clusters,
        )
        back_after = time.monotonic() - killed_at

        counts = pipeline.wait_settled(
            ids, 300, clusters=clusters, tick=resume_due_tasks
        )
        forge = pipeline.forge_counts(ids)
        not_completed = pipeline.not_completed(ids)
        runs = runs_by_machine(ids)

    print(
        f"\n{kind}: {cut} cut on {VICTIM}, running elsewhere {back_after:.1f} s later"
    )
    assert counts == {Status.COMPLETED: TASKS}, not_completed
    assert_each_completed_and_merged_once(ids, forge)
    assert back_after <= BACK_WITHIN_SECONDS, back_after

    # The cut task started a run on the victim and finished on the others.
    machines_of_cut = [machine for _, machine in runs[cut]]
    assert VICTIM in machines_of_cut
    assert machines_of_cut[-1] != VICTIM
    # Phases are not tied to a machine: tasks moved between the survivors too.
    survivors = set(MACHINES) - {VICTIM}
    used = {machine for task_runs in runs.values() for _, machine in task_runs}
    assert survivors <= used, runs
    assert sum(len({m for _, m in task_runs}) > 1 for task_runs in runs.values()) > (
        TASKS // 2
    ), runs
