"""Factories for test data, in one place."""

from __future__ import annotations

import itertools

from django.contrib.auth import get_user_model

from codex.accounts.models import ApiToken
from codex.repositories.models import Repository
from codex.tasks.models import Task

_counter = itertools.count(1)


def make_repository(url: str | None = None, **fields) -> Repository:
    url = url or f"https://github.com/acme/repo{next(_counter)}"
    repository, _ = Repository.objects.get_or_create(url=url, defaults=fields)
    return repository


def make_task(repository: Repository | None = None, **fields) -> Task:
    """A pending task created through intake, as the API would create it."""
    defaults = {
        "title": "Add user authentication",
        "description": "As a user, I want to log in.",
        "priority": "high",
        "acceptance_criteria": "- Users can log in",
    }
    defaults.update(fields)
    task, _ = Task.objects.create_from_request(
        repository=repository or make_repository(), **defaults
    )
    return task


def make_user(username: str | None = None, *, role: str | None = None, **fields):
    """A console user; `role` "team" or "integrator" puts them in that group
    (codex.accounts.permissions: no group at all means integrator)."""
    from django.contrib.auth.models import Group

    username = username or f"user{next(_counter)}"
    user = get_user_model().objects.create_user(
        username=username, password="pw-12345!", **fields
    )
    if role is not None:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def make_token(user=None) -> tuple[ApiToken, str]:
    return ApiToken.issue(user or make_user(), "tests")


def put_in_state(
    task: Task, status: str | None = None, phase: str | None = None, **fields
) -> Task:
    """Force a task into a state for a test, bypassing transitions (tests only)."""
    values = dict(fields)
    if status:
        values["status"] = status
    if phase:
        values["phase"] = phase
    Task.objects.filter(pk=task.pk)._update_with_version(**values)
    task.refresh_from_db()
    return task


def waiting_for_plan_approval(task: Task, *, reason: str = "the plan waits") -> Task:
    """`task` in planning with its spec, plan and tasks stored, stopped at the
    plan gate (the version of what was stored) through the real transition."""
    from codex.tasks.models import Artifact, Status
    from codex.tasks.models.gates import plan_version

    Artifact.store_all(
        task, {"spec.md": "# Spec", "plan.md": "# Plan", "tasks.md": "- [ ] one"}
    )
    put_in_state(task, Status.IN_PROGRESS, "planning", total_tasks=1)
    return task.perform(
        "await_approval",
        by="system:pipeline",
        reason=reason,
        kind="plan",
        subject=plan_version(task),
    )


def make_worker_cluster(
    host: str = "worker-1",
    *,
    jail_problem: str = "",
    jail_fix: str = "",
    backend: str = "bubblewrap",
    model_key: bool = True,
    phase_runner: str = "agents.phase_runner.AgentPhaseRunner",
    beat_seconds_ago: float = 0,
    **fields,
):
    """A worker cluster that beats, with the health report a real one makes
    (codex.fleet.readiness.worker_report)."""
    from datetime import timedelta

    from django.utils import timezone

    from codex.core.workers.clusters import WorkerCluster

    now = timezone.now()
    beat_at = now - timedelta(seconds=beat_seconds_ago)
    health = {
        "jail": {
            "backend": backend,
            "jailed": backend != "none",
            "problem": jail_problem,
            "fix": jail_fix,
            "in_container": False,
        },
        "phase_runner": phase_runner,
        "model_key": model_key,
    }
    defaults = {
        "claim": f"c{next(_counter):011d}",
        "pid": 4000 + next(_counter),
        "started_at": beat_at,
        "beat_at": beat_at,
        "health": health,
        "health_at": beat_at,
    }
    defaults.update(fields)
    return WorkerCluster.objects.create(host=host, **defaults)
