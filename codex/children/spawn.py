"""Fanning a parent task out to its children (docs/children.md).

`fan_out_task(parent, requests, by=...)` is the one way a parent gets its
children, whoever asks: the planner's split, a request listing its children,
or an operator in the console. Each step is safe to run again (a worker that
dies half-way leaves nothing doubled): the fan-out is one per parent, the
parent's issue is opened once (perform_once, found again by its marker), each
child task is created under an idempotency key, and the transitions are only
made from the state before them.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.db import IntegrityError

from codex.children.choices import FanOutState
from codex.children.hooks import PipelineTask, create_task
from codex.children.models import Child, FanOut
from codex.children.models.fan_out_queryset import completion_window
from codex.children.requests import ChildListInvalid, ChildRequest
from codex.core.store import perform_once
from codex.repositories.forge import get_forge

logger = logging.getLogger(__name__)

# Issues of a local repository are just numbers shared with its pull requests
# (codex.repositories.local_forge); a parent's issue there takes a number far
# above those the forge hands out, one per fan-out, and each child's one of
# ten numbers of its fan-out above those (C1 to C5).
LOCAL_ISSUE_BASE = 100_000
LOCAL_CHILD_ISSUE_BASE = 200_000


def local_child_issue_number(fan_out: FanOut, child_id: str) -> int:
    """The local-forge issue number of child `child_id` (C1 … C5)."""
    return LOCAL_CHILD_ISSUE_BASE + fan_out.pk * 10 + int(child_id[1:])


def issue_marker(parent: PipelineTask) -> str:
    return f"<!-- codex:fanout:{parent.task_id} -->"


def fan_out_task(
    parent: PipelineTask,
    requests: list[ChildRequest],
    *,
    by: str,
    window: timedelta | None = None,
) -> FanOut:
    """Make `parent` a parent of `requests` (1 to 5): its fan-out, its issue
    (the one it came from, else one opened for it), one task per child, and
    the completion window opened. Returns the fan-out. Raises ChildListInvalid
    for an empty or too long list, ClassifiedFailure when the forge fails
    (run again: what was done stays done)."""
    if not requests:
        raise ChildListInvalid("no children to fan out to")
    fan_out = FanOut.objects.filter(parent=parent).first()
    if fan_out is None:
        try:
            fan_out = FanOut.objects.start(
                parent,
                expected_child_count=len(requests),
                by=by,
                issue_number=parent.issue_number,
                window=window or completion_window(),
            )
        except IntegrityError:  # another worker started it first
            fan_out = FanOut.objects.get(parent=parent)
    if fan_out.issue_number is None:
        number = open_parent_issue(fan_out, requests)
        FanOut.objects.filter(pk=fan_out.pk, issue_number__isnull=True).update(
            issue_number=number
        )
        fan_out.refresh_from_db()
    for request in requests:
        create_child(fan_out, request, by=by)
    if fan_out.state == FanOutState.CREATED:
        fan_out.perform(
            "spawn_children", by=by, reason=f"{len(requests)} child task(s) created"
        )
    if fan_out.state == FanOutState.CHILDREN_SPAWNED:
        fan_out.perform("open_window", by=by)
    return fan_out


def open_parent_issue(fan_out: FanOut, requests: list[ChildRequest]) -> int:
    """The issue the children report on, for a parent that came without one:
    a GitHub issue through the forge, or a local-forge issue number with the
    request as its first comment. Opened once (perform_once, found again by
    its marker)."""
    parent = fan_out.parent
    forge = get_forge(parent.repository)
    marker = issue_marker(parent)
    listing = "\n".join(f"- [ ] {r.child_id}: {r.title}" for r in requests)
    body = (
        f"{parent.description}\n\n## Children\n{listing}\n\n"
        f"Codex-Task: {parent.task_id}\n{marker}"
    ).strip()
    title = f"{parent.title} ({parent.task_id})"
    key = f"fanout:issue:{parent.repository.pk}:{parent.task_id}"
    if parent.repository.is_local:
        number = LOCAL_ISSUE_BASE + fan_out.pk
        done = perform_once(
            key,
            lambda: {"number": number, **forge.comment(number, f"# {title}\n\n{body}")},
            lookup=lambda: (
                None
                if forge.find_comment(number, marker) is None
                else {"number": number}
            ),
            task=parent,
            kind="issue",
        )
    else:
        done = perform_once(
            key,
            lambda: dict(forge.create_issue(title, body)),
            lookup=lambda: forge.find_issue(marker),
            task=parent,
            kind="issue",
        )
    return int(done["number"])


def child_description(fan_out: FanOut, request: ChildRequest) -> str:
    parent = fan_out.parent
    return (
        f"{request.description}\n\n"
        f"Child {request.child_id} of {parent.task_id} ({parent.title}); "
        f"reports on issue #{fan_out.issue_number}."
    ).strip()


def create_child(fan_out: FanOut, request: ChildRequest, *, by: str) -> Child:
    """The child's task (created once, under an idempotency key; its first
    step is enqueued for a worker) and its row. On GitHub the child gets an
    issue of its own, a sub-issue of the parent's where GitHub allows."""
    existing = Child.objects.filter(fan_out=fan_out, child_id=request.child_id).first()
    if existing is not None:
        return existing
    parent = fan_out.parent
    issue = _child_issue(fan_out, request)
    task, _ = create_task(
        repository=parent.repository,
        title=f"{request.title}"[:200],
        description=child_description(fan_out, request),
        priority=parent.priority,
        acceptance_criteria=request.acceptance_criteria,
        created_by=parent.created_by,
        actor=by,
        idempotency_key=f"fanout:{parent.task_id}:{request.child_id}",
        issue_number=issue,
    )
    child, _ = Child.objects.get_or_create(
        fan_out=fan_out, child_id=request.child_id, defaults={"task": task}
    )
    return child


def _child_issue(fan_out: FanOut, request: ChildRequest) -> int | None:
    """An issue for the child: on GitHub one of its own, linked as a
    sub-issue of the parent's (best effort: an account or plan without
    sub-issues keeps the plain issue); on the local forge a number of its own
    whose first comment is the request. Its runs record it as the issue they
    worked (docs/domain/fleet.md#agent-run)."""
    parent = fan_out.parent
    if parent.repository.is_local:
        return _local_child_issue(fan_out, request)
    forge: Any = get_forge(parent.repository)
    marker = f"<!-- codex:child:{parent.task_id}:{request.child_id} -->"
    issue = perform_once(
        f"fanout:child-issue:{parent.repository.pk}:{parent.task_id}:"
        f"{request.child_id}",
        lambda: dict(
            forge.create_issue(
                f"{request.child_id}: {request.title}",
                f"{request.description}\n\nChild {request.child_id} of "
                f"#{fan_out.issue_number}.\n{marker}".strip(),
            )
        ),
        lookup=lambda: forge.find_issue(marker),
        task=parent,
        kind="issue",
    )
    try:
        perform_once(
            f"fanout:sub-issue:{parent.repository.pk}:{fan_out.issue_number}:"
            f"{issue['number']}",
            lambda: (
                forge.add_sub_issue(fan_out.issue_number, issue["id"]),
                {"linked": issue["number"]},
            )[1],
            lookup=None,
            task=parent,
            kind="issue",
        )
    except Exception as exc:  # noqa: BLE001 - sub-issues are a courtesy
        logger.info("sub-issue link of %s not made: %s", issue["number"], exc)
    return int(issue["number"])


def _local_child_issue(fan_out: FanOut, request: ChildRequest) -> int:
    """The child's local-forge issue: its number, opened (once) with the
    request as its first comment."""
    parent = fan_out.parent
    forge = get_forge(parent.repository)
    number = local_child_issue_number(fan_out, request.child_id)
    marker = f"<!-- codex:child:{parent.task_id}:{request.child_id} -->"
    body = (
        f"# {request.child_id}: {request.title}\n\n{request.description}\n\n"
        f"Child {request.child_id} of #{fan_out.issue_number}.\n{marker}"
    )
    perform_once(
        f"fanout:child-issue:{parent.repository.pk}:{parent.task_id}:"
        f"{request.child_id}",
        lambda: {"number": number, **forge.comment(number, body)},
        lookup=lambda: (
            None if forge.find_comment(number, marker) is None else {"number": number}
        ),
        task=parent,
        kind="issue",
    )
    return number
