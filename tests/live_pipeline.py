"""Many tasks through all six phases with live workers, a scripted model and
the local forge: the harness of the chaos, fault-storm and throughput tests.

What is real: `manage.py qcluster` subprocesses (tests/workers/live/cluster.py)
on the test's PostgreSQL database and the ORM broker, the AgentPhaseRunner with
the anthropic SDK speaking HTTP to tests/model_stub.py's ModelStub on loopback,
git worktrees, pytest run by the QA phase in each worktree, and the local forge
(a bare repository on disk, pull requests, issues and comments in the database)
merging every task into main. What is scripted: the model's answers.

The scripted model (`ScriptedAgent`, a ModelStub `responder`)
--------------------------------------------------------------
One stateless object answers every conversation of every task at once, from
the request alone:

- the phase, from the submit_result tool's schema (`phase_of`: each role's
  result schema has a property no other role has, e.g. ``plan_md``);
- the turn, from the number of assistant messages so far (`turn_of`);
- the task, from the first user message, which AgentPhaseRunner starts with
  "Task <task_id> (priority ...)" (`task_of`).

It then answers with turn `turn` of agents/demo.py's scripted conversation for
the phase (`agents.demo.conversation`), made for that task by `change_for`:
each task's developer writes features/f_<slug>.py and its test
features/test_f_<slug>.py (`feature_files`), so any number of pull requests
merge into main without conflicts, and QA's real pytest run passes. A turn past
the script (the runtime nudging for submit_result) gets the last answer again.
`delay` holds every answer back (the benchmark uses 0.2 s, bounded by the
stub's MAX_DELAY_SECONDS).

API
---
``with live_pipeline(root, delay=0.2, wrap=None) as pipeline:`` sets it up:
a bare repository <root>/live.git (registered as a local-forge Repository), a
ModelStub on 127.0.0.1 answering with ``wrap(agent)`` when `wrap` is given (a
fault injector: a callable taking the ScriptedAgent and returning a responder),
else with the agent itself; and, while the block runs, the test process's
enqueues routed to the ORM broker the workers read. Then:

- ``pipeline.worker_env(workers=2, **extra)``: the environment of a worker
  (cluster.worker_env's short timeouts and leases; AgentPhaseRunner pointed at
  the stub, <root>/worktrees and <root>/mirrors, no release approval, the
  sandbox's PATH finding this venv's pytest); `extra` adds variables. Start
  clusters with ``Clusters(directory).start(env)`` (or the `live_clusters`
  fixture, which stops them all at the end);
- ``pipeline.create_tasks(n)``: n feature requests (created_by manual, issue
  numbers ISSUE_BASE + i, each first step enqueued); returns the task ids;
- ``pipeline.wait_settled(task_ids, timeout, clusters=...)``: until no task is
  pending, in progress or blocked; returns {status: count};
- ``pipeline.forge_counts(task_ids)``: what happened on the forge, per task
  (`ForgeCounts`): pull requests opened and merged, squash commits on main
  naming the task, comments on its issue (the progress comment and the
  release's "Done in ...");
- ``pipeline.stub.requests``: every model request received (bodies, headers).

Issue numbers start at ISSUE_BASE because on the local forge, as on GitHub, a
pull request is an issue too: closing issue N after a release closes pull
request N, so the tasks' issues must not share numbers with their pull
requests.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from agents.demo import (
    PHASES,
    ScriptedChange,
    conversation,
    create_bare_repository,
    git,
    register,
)
from tests.model_stub import ModelStub, Reply

REPOSITORY_NAME = "live"
ISSUE_BASE = 1000
ACTOR = "live-pipeline"
SEED = {
    "README.md": "# live\n\nThe live-pipeline tests' repository.\n",
    "features/README.md": "One module per task, with its test.\n",
}
# The submit_result property only one role's schema has, and its phase.
PHASE_MARKERS = {
    "should_proceed": "intake",
    "plan_md": "planning",
    "commit_message": "implementation",
    "recommendation": "verification",
    "assessment": "review",
    "release_notes": "release",
}
TASK_LINE = re.compile(r"^Task (\S+) \(priority")
SETTLED = ("completed", "failed", "cancelled", "escalated")

Responder = Callable[[dict[str, Any]], Reply]


# -- reading a request -------------------------------------------------------


def phase_of(body: dict[str, Any]) -> str:
    """The phase a request belongs to, from its submit_result tool's schema."""
    for tool in body.get("tools") or []:
        if tool.get("name") == "submit_result":
            properties = (tool.get("input_schema") or {}).get("properties") or {}
            for marker, phase in PHASE_MARKERS.items():
                if marker in properties:
                    return phase
    raise ValueError("no submit_result tool with a known schema in the request")


def turn_of(body: dict[str, Any]) -> int:
    """How many times the model has answered in this conversation so far."""
    return sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        block.get("text", "") for block in content or [] if isinstance(block, dict)
    )


def task_of(body: dict[str, Any]) -> str:
    """The task id, from the first user message ("Task <id> (priority ...)")."""
    for msg in body.get("messages") or []:
        if msg.get("role") == "user":
            found = TASK_LINE.match(_text(msg.get("content")).lstrip())
            if found:
                return found.group(1)
            break
    raise ValueError("the first user message names no task")


def conversation_key(body: dict[str, Any]) -> tuple[str, str, int]:
    """(task, phase, turn): which answer a request asks for. A retried request
    has the same key as the one it retries."""
    return task_of(body), phase_of(body), turn_of(body)


# -- what each task's agents write -------------------------------------------


def slug(task_id: str) -> str:
    """A Python identifier naming the task's feature module."""
    return "f_" + re.sub(r"[^0-9a-z]+", "_", task_id.lower()).strip("_")


def feature_files(task_id: str) -> dict[str, str]:
    """The developer's files for `task_id`: a module and its pytest test, in
    features/ (no __init__.py: pytest puts the test's folder on sys.path)."""
    name = slug(task_id)
    return {
        f"features/{name}.py": f'def value():\n    return "{task_id}"\n',
        f"features/test_{name}.py": (
            f"from {name} import value\n\n\n"
            f"def test_{name}():\n"
            f'    assert value() == "{task_id}"\n'
        ),
    }


def feature_change(task_id: str) -> ScriptedChange:
    """The scripted conversation's content for `task_id`."""
    name = slug(task_id)
    return ScriptedChange(
        spec=(
            f"# Feature: {name}\n\n## Overview\nfeatures/{name}.py: value() "
            f"returns {task_id}.\n\n## Acceptance Criteria\n- value() is the id\n"
        ),
        plan=f"# Implementation Plan\n\nWrite features/{name}.py and its test.",
        files=feature_files(task_id),
        summary=f"Added {name} and its test.",
        commit_message=f"Add {name}",
        criteria=(("value() is the id", f"test_{name}"),),
        release_notes=f"Adds features/{name}.py.",
        analysis={"files": [f"features/{name}.py"]},
    )


class ScriptedAgent:
    """The ModelStub responder: answers any phase of any task (module
    docstring). Stateless, so safe to call from the stub's threads at once."""

    def __init__(
        self,
        *,
        delay: float = 0.0,
        change_for: Callable[[str], ScriptedChange] = feature_change,
    ) -> None:
        self.delay = delay
        self.change_for = change_for

    def __call__(self, body: dict[str, Any]) -> Reply:
        task_id, phase, turn = conversation_key(body)
        replies = conversation(self.change_for(task_id))[phase]
        reply = replies[min(turn, len(replies) - 1)]
        reply.delay = self.delay
        return reply


# -- notifications delivered by workers --------------------------------------

NOTIFY_LOG = "CODEX_TEST_NOTIFY_LOG"


class FileSender:
    """A notification sender (CODEX_NOTIFY_SENDER) for live workers: appends
    the notification id to the file named by CODEX_TEST_NOTIFY_LOG, one line
    per send, so a test counts deliveries across processes."""

    def send(self, notification: Any) -> dict[str, Any]:
        from tests.workers.live.side_effect_runner import append_line

        append_line(os.environ[NOTIFY_LOG], notification.notification_id)
        return {"channel": "file", "id": notification.notification_id}


# -- the pipeline ------------------------------------------------------------


@dataclass
class ForgeCounts:
    """What the forge shows for one task."""

    pulls_opened: int
    pulls_merged: int
    squash_commits_on_main: int
    issue_comments: int
    issue_closed: bool


@dataclass
class LivePipeline:
    root: Path
    bare: Path
    repository: Any  # codex.repositories.models.Repository
    stub: ModelStub
    agent: ScriptedAgent

    def worker_env(self, *, workers: int = 2, **extra: str) -> dict[str, str]:
        """A live worker's environment (module docstring)."""
        from tests.workers.live.cluster import Files, worker_env

        files = Files(
            side_effect_log=self.root / "side_effects.log",
            run_log=self.root / "runs.log",
        )
        env = worker_env(files, workers=workers, var_dir=self.root / "var")
        env.update(
            {
                "CODEX_PHASE_RUNNER": "agents.phase_runner.AgentPhaseRunner",
                "ANTHROPIC_BASE_URL": self.stub.url,
                "ANTHROPIC_API_KEY": "live-pipeline-key",
                "CODEX_WORKTREE_ROOT": str(self.root / "worktrees"),
                "CODEX_MIRROR_ROOT": str(self.root / "mirrors"),
                "CODEX_MODEL_MAX_RETRIES": "0",
                "CODEX_RELEASE_REQUIRES_APPROVAL": "0",
                "CODEX_TEST_COMMAND": "python -B -m pytest -q -p no:cacheprovider",
                # The sample project needs none of the dev venv's pytest plugins
                # (loading them costs ~2 CPU-seconds per QA run).
                "CODEX_SANDBOX_ENV": "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1",
                "CODEX_SANDBOX_PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                f"{os.defpath}",
                # The jail sees this venv read-only (its pytest runs QA).
                "CODEX_SANDBOX_READONLY_PATHS": ",".join({sys.prefix, sys.base_prefix}),
                "CODEX_NOTIFY_SENDER": "tests.live_pipeline.FileSender",
                NOTIFY_LOG: str(self.root / "notifications.log"),
            }
        )
        env.update(extra)
        return env

    def machine_env(self, name: str, home: Path, **extra: str) -> dict[str, str]:
        """A worker of machine `name`: its own machine name and its own var
        folder, mirrors and worktrees under `home` (docs/deployment.md)."""
        return self.worker_env(
            CODEX_MACHINE_NAME=name,
            CODEX_VAR_DIR=str(home / "var"),
            CODEX_WORKTREE_ROOT=str(home / "worktrees"),
            CODEX_MIRROR_ROOT=str(home / "mirrors"),
            **extra,
        )

    def create_tasks(self, count: int, *, title: str = "Live feature") -> list[str]:
        """`count` feature requests, each with its first step enqueued."""
        from codex.tasks.models import CreatedBy, Task

        ids = []
        for number in range(count):
            task, _ = Task.objects.create_from_request(
                repository=self.repository,
                title=f"{title} {number + 1}",
                description="Add a feature module that returns the task id.",
                acceptance_criteria="- value() is the id",
                created_by=CreatedBy.MANUAL,
                actor=ACTOR,
                issue_number=ISSUE_BASE + number + 1,
            )
            ids.append(task.task_id)
        return ids

    @staticmethod
    def statuses(task_ids: list[str]) -> Counter:
        from codex.tasks.models import Task

        return Counter(
            Task.objects.filter(task_id__in=task_ids).values_list("status", flat=True)
        )

    @staticmethod
    def not_completed(task_ids: list[str]) -> dict[str, list[str]]:
        """Why each task that did not complete stopped: its status, errors and
        last events, so that a failed run can be read without running it again."""
        from codex.events.models import Event
        from codex.tasks.models import Task

        why = {}
        for task in Task.objects.filter(task_id__in=task_ids).exclude(
            status="completed"
        ):
            events = Event.objects.filter(task=task).order_by("-created_at", "-id")
            why[task.task_id] = [
                f"{task.status} in {task.phase}",
                *(
                    f"error in {error['phase']} ({error['code']}): {error['message']}"
                    for error in task.errors
                ),
                *(
                    f"{event.kind} {event.field} {event.source}->{event.target} "
                    f"by {event.actor}: {event.reason}"
                    for event in reversed(events[:12])
                ),
            ]
        return why

    def wait_settled(
        self,
        task_ids: list[str],
        timeout: float,
        *,
        clusters: Any = None,
        tick: Callable[[], object] | None = None,
    ) -> Counter:
        """Until every task is completed, failed, cancelled or escalated;
        `tick` runs every poll (e.g. a scheduled job the test drives)."""
        from tests.workers.live.cluster import wait_for

        def settled() -> Counter | None:
            if tick is not None:
                tick()
            counts = self.statuses(task_ids)
            done = sum(counts[status] for status in SETTLED)
            return counts if done == len(task_ids) else None

        try:
            return wait_for(
                settled,
                timeout,
                "every task to settle",
                clusters=clusters,
                interval=0.5,
            )
        except AssertionError as exc:
            counts = dict(self.statuses(task_ids))
            raise AssertionError(f"statuses {counts}: {exc}") from None

    def main_messages(self) -> list[str]:
        """The full message of every commit on main, newest first."""
        out = git("log", "--format=%B%x00", "main", cwd=self.bare)
        return [part.strip() for part in out.split("\x00") if part.strip()]

    def main_files(self) -> set[str]:
        out = git("ls-tree", "-r", "--name-only", "main", cwd=self.bare)
        return set(out.split())

    def forge_counts(self, task_ids: list[str]) -> dict[str, ForgeCounts]:
        """Per task: the local forge's rows and the bare repository's main."""
        from codex.repositories.models import LocalComment, LocalIssue
        from codex.tasks.models import Task

        messages = self.main_messages()
        out = {}
        for task in Task.objects.filter(task_id__in=task_ids):
            pulls = self.repository.local_pull_requests.filter(head=task.branch)
            issue = LocalIssue.objects.filter(
                repository=self.repository, number=task.issue_number
            ).first()
            out[task.task_id] = ForgeCounts(
                pulls_opened=pulls.count(),
                pulls_merged=pulls.filter(state="merged").count(),
                squash_commits_on_main=sum(
                    f"Codex-Task: {task.task_id}" in m for m in messages
                ),
                issue_comments=LocalComment.objects.filter(issue=issue).count()
                if issue
                else 0,
                issue_closed=bool(issue and issue.closed_at),
            )
        return out


@contextmanager
def live_pipeline(
    root: Path,
    *,
    delay: float = 0.0,
    wrap: Callable[[ScriptedAgent], Responder] | None = None,
    broker: Any = None,
) -> Iterator[LivePipeline]:
    """The bare repository, the stub and the enqueue routing (module docstring):
    the test process enqueues onto `broker` (a django-q broker object; the ORM
    one by default)."""
    from django_q.brokers.orm import ORM

    root = Path(root).absolute()
    bare = create_bare_repository(root, REPOSITORY_NAME, SEED)
    repository = register(bare)
    agent = ScriptedAgent(delay=delay)
    responder = wrap(agent) if wrap is not None else agent
    broker = broker if broker is not None else ORM()
    with (
        ModelStub(responder=responder) as stub,
        mock.patch("django_q.tasks.get_broker", lambda *args, **kw: broker),
    ):
        yield LivePipeline(
            root=root, bare=bare, repository=repository, stub=stub, agent=agent
        )


@pytest.fixture
def live_clusters(transactional_db, tmp_path):
    """Clusters for one test, all stopped (or SIGKILLed) at its end. The
    seeded schedules go first: the test drives what it needs itself."""
    from django_q.models import Schedule

    from tests.workers.live.cluster import Clusters

    Schedule.objects.all().delete()
    started = Clusters(directory=tmp_path)
    try:
        yield started
    finally:
        started.cleanup()


__all__ = [
    "PHASES",
    "ForgeCounts",
    "LivePipeline",
    "ScriptedAgent",
    "conversation_key",
    "feature_files",
    "live_clusters",
    "live_pipeline",
    "phase_of",
    "task_of",
    "turn_of",
]
