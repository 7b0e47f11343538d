"""A fan-out run through the product path with an in-memory forge: the
parent fans out (fan_out_task), children reach release or stop and report
(report_child), the analysis runs and is carried out (carry_out_analysis),
inline. Next-step jobs of tasks are collected, not run (no agents here)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from codex.children.models import Child, FanOut
from codex.children.requests import ChildRequest
from codex.core.errors import Action, make_error
from tests.factories import make_task, put_in_state

ADVANCE = "codex.tasks.jobs.advance_task"
REPO = "https://github.com/acme/fanout"


class MemoryForge:
    """Issues, comments and pull requests in memory; records every write."""

    def __init__(self) -> None:
        self.issues: dict[int, dict[str, Any]] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.pulls: dict[int, dict[str, Any]] = {}
        self.merged: list[int] = []
        self.sub_issues: list[tuple[int, int]] = []
        self.closed: list[int] = []
        self.refuse: set[int] = set()
        self._ids = itertools.count(5000)

    def create_issue(self, title: str, body: str) -> dict[str, Any]:
        number = 100 + len(self.issues)
        issue = {"number": number, "id": next(self._ids), "url": f"{REPO}/{number}"}
        self.issues[number] = {**issue, "title": title, "body": body}
        return issue

    def find_issue(self, marker: str) -> dict[str, Any] | None:
        for issue in self.issues.values():
            if marker in issue["body"]:
                return {k: issue[k] for k in ("number", "id", "url")}
        return None

    def add_sub_issue(self, issue_number: int, sub_issue_id: int) -> None:
        self.sub_issues.append((issue_number, sub_issue_id))

    def comment(self, issue_number: int, body: str) -> dict[str, Any]:
        found = {"id": next(self._ids), "url": f"{REPO}#c", "body": body}
        self.comments.setdefault(issue_number, []).append(found)
        return found

    def find_comment(self, issue_number: int, marker: str):
        hits = [c for c in self.comments.get(issue_number, []) if marker in c["body"]]
        return hits[-1] if hits else None

    def open_pull(self, number: int) -> str:
        self.pulls[number] = {
            "number": number,
            "url": f"{REPO}/pull/{number}",
            "head": f"codex/child-{number}",
            "base": "main",
            "head_sha": f"{number:040d}",
            "state": "open",
            "draft": False,
            "title": f"child {number}",
        }
        return self.pulls[number]["url"]

    def get_pull_request(self, number: int) -> dict[str, Any]:
        return dict(self.pulls[number])

    def mark_ready(self, number: int) -> dict[str, Any]:
        self.pulls[number]["draft"] = False
        return dict(self.pulls[number])

    def merge_pull_request(self, number: int, *, sha: str, method: str = "squash"):
        if number in self.refuse:
            make_error(
                "github", 405, Action.MANUAL_REVIEW, "Pull Request is not mergeable"
            ).raise_()
        assert self.pulls[number]["head_sha"] == sha
        self.pulls[number]["state"] = "merged"
        self.merged.append(number)
        return dict(self.pulls[number])

    def close_issue(self, issue_number: int, comment: str = "") -> None:
        self.closed.append(issue_number)

    def bodies(self, issue_number: int) -> list[str]:
        return [c["body"] for c in self.comments.get(issue_number, [])]


def no_model(fan_out: FanOut):
    """CODEX_CHILDREN_ANALYST for these tests: no model, the rules decide."""
    raise RuntimeError("no model in tests")


@pytest.fixture
def memory_forge(monkeypatch, settings):
    """The in-memory forge for every fan-out module; the fan-out's own jobs
    run inline, every other job (a task's next step, its progress comment)
    is collected in forge.steps as (job, argument)."""
    from django_q import tasks as q_tasks

    memory = MemoryForge()
    memory.steps = []
    for module in ("spawn", "reporting", "execute"):
        monkeypatch.setattr(
            f"codex.children.{module}.get_forge", lambda repository: memory
        )
    settings.CODEX_CHILDREN_ANALYST = "tests.children.harness.no_model"
    settings.CODEX_RUN_JOBS_INLINE = True
    original = q_tasks.async_task

    def async_task(func, *args, **kwargs):
        if not str(func).startswith("codex.children."):
            memory.steps.append((func, *args))
            return None
        return original(func, *args, **kwargs)

    monkeypatch.setattr(q_tasks, "async_task", async_task)
    return memory


def fan_out(count: int, **options) -> FanOut:
    """A parent in planning fanned out to `count` children C1..Cn."""
    from codex.children.spawn import fan_out_task
    from tests.factories import make_repository

    parent = make_task(make_repository(REPO), title="Parent")
    put_in_state(parent, status="in_progress", phase="planning")
    requests = [ChildRequest(f"C{n}", f"part {n}") for n in range(1, count + 1)]
    return fan_out_task(parent, requests, by="test", **options)


def child(fan_out: FanOut, child_id: str):
    return Child.objects.select_related("task").get(fan_out=fan_out, child_id=child_id)


def succeed(forge: MemoryForge, fan_out: FanOut, child_id: str, number: int):
    """The child reached release with pull request `number`; it reports."""
    from codex.children.jobs import report_child

    task = child(fan_out, child_id).task
    put_in_state(
        task, status="in_progress", phase="release", pr_url=forge.open_pull(number)
    )
    return report_child(task.task_id)


def fail(fan_out: FanOut, child_id: str):
    """The child failed; it reports."""
    from codex.children.jobs import report_child

    task = child(fan_out, child_id).task
    put_in_state(task, status="failed")
    return report_child(task.task_id)
