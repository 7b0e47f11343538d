"""Assertions shared by the live-worker tests."""

from __future__ import annotations

from collections import Counter

from codex.events.models import Event, EventKind
from codex.tasks.models import Status, Task
from tests.workers.live.cluster import Cluster, Clusters, Files, wait_for
from tests.workers.live.side_effect_runner import side_effect_key

PHASES = ["intake", "planning", "implementation", "verification", "review", "release"]


def all_completed(task_ids: list[str]) -> bool:
    done = Task.objects.filter(task_id__in=task_ids, status=Status.COMPLETED).count()
    return done == len(task_ids)


def wait_completed(
    task_ids: list[str], clusters: Clusters, alive: Cluster, timeout: float = 60
) -> None:
    """Until every task completed; fails at once if `alive` exits."""
    wait_for(
        lambda: all_completed(task_ids),
        timeout,
        "the tasks to complete",
        clusters=clusters,
        while_alive=[alive],
    )


def completions(task: Task) -> int:
    """Status transitions to completed in the task's event log."""
    return Event.objects.filter(
        task=task,
        kind=EventKind.TRANSITION,
        field="status",
        target=Status.COMPLETED,
    ).count()


def assert_each_completed_and_merged_once(task_ids: list[str], forge: dict) -> None:
    """Each task completed once in its event log, and its pull request was
    opened, merged and squashed onto main once (`forge`: the live pipeline's
    forge counts per task)."""
    for task in Task.objects.filter(task_id__in=task_ids):
        assert completions(task) == 1, task.task_id
    assert all(
        (f.pulls_opened, f.pulls_merged, f.squash_commits_on_main) == (1, 1, 1)
        for f in forge.values()
    ), forge


def expected_side_effects(task_ids: list[str]) -> list[str]:
    return sorted(
        side_effect_key(task_id, phase)
        for task_id in task_ids
        for phase in ("implementation", "release")
    )


def assert_side_effects_once(files: Files, task_ids: list[str]) -> None:
    lines = files.side_effect_lines()
    twice = {key: n for key, n in Counter(lines).items() if n > 1}
    assert not twice, f"side effects performed more than once: {twice}"
    assert sorted(lines) == expected_side_effects(task_ids)


def assert_no_concurrent_runs(files: Files, killed_at: float | None = None) -> None:
    """No two run(task) calls of one task overlapped in time. A run cut short
    by a kill (no end recorded) ends at `killed_at` (time.time() of the kill)."""
    by_task: dict[str, list[dict]] = {}
    for run in files.runs():
        by_task.setdefault(run["task"], []).append(run)
    for task_id, runs in by_task.items():
        previous = None
        for run in sorted(runs, key=lambda r: r["start"]):
            end = run["end"]
            if end is None:
                assert killed_at and run["start"] <= killed_at, (
                    f"a run that never ended and was not killed: {run}"
                )
                end = killed_at
            if previous is not None:
                assert run["start"] >= previous[1], (
                    f"{task_id}: {run['phase']} (pid {run['pid']}) started while "
                    f"{previous[0]['phase']} (pid {previous[0]['pid']}) still ran"
                )
            previous = (run, end)
