"""One live progress comment per task on its issue (docs/gates.md).

Created once (perform_once: a crash between posting and recording it finds
the comment again by its marker instead of posting a second), then edited in
place at every status or phase change: the phase, the status and why it
waits, links to the task page and the pull request, the cost so far, and the
`@codex` commands a person can use. Edits are PATCHes of the same comment, so
one repeated after a crash changes nothing; they are rate-limited (at most
one per CODEX_PROGRESS_MIN_SECONDS per task: a change queues one edit, held
back in the queue until that time, and the changes made while it waits are
carried by it; see ProgressEdit), and skipped when the text did not change.

When the task waits for its plan to be approved, spec.md, plan.md and tasks.md are
posted once per plan version as a comment of their own.
"""

from __future__ import annotations

import hashlib
import time

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from codex.core.store import exclusive, perform_once
from codex.fleet.models import AgentRun
from codex.repositories.forge import get_forge
from codex.tasks.models import GateKind, ProgressEdit, Status, Task
from codex.tasks.models.gates import PLAN_DOCUMENTS
from codex.tasks.models.progress_edit import min_seconds

DOCUMENT_MAX_CHARS = 18_000
COMMANDS = (
    "`@codex status`, `@codex steer <message>` (read by the agent before its "
    "next step), `@codex approve <version>` / `@codex changes <what to change>` "
    "(when a plan waits), `@codex approve` (when a merge waits), `@codex retry`, "
    "`@codex cancel`, `@codex answer <text>`"
)


def progress_marker(task: Task) -> str:
    return f"<!-- codex:progress:{task.task_id} -->"


def task_link(task: Task) -> str:
    """The task page's address: absolute with CODEX_PUBLIC_URL, else a path."""
    path = reverse("pages:task", args=[task.task_id])
    base = getattr(settings, "CODEX_PUBLIC_URL", "") or ""
    return f"{base.rstrip('/')}{path}"


def progress_body(task: Task) -> str:
    """The comment's text for the task as it stands."""
    spent = AgentRun.spend_of_task(task.pk)
    status = task.get_status_display().lower()
    lines = [
        f"**Codex** is working on this: [{task.task_id}]({task_link(task)})",
        "",
        f"- Phase: **{task.get_phase_display()}**; status: **{status}**",
    ]
    gate = task.open_gate if task.status == Status.ESCALATED else None
    if gate is not None:
        lines.append(f"- Waiting: {gate.reason}")
        if gate.kind == GateKind.PLAN:
            lines.append(f"- Plan version: `{gate.subject}`")
    elif task.status == Status.BLOCKED and task.blocked_reason:
        lines.append(f"- Blocked: {task.blocked_reason}")
    elif task.status == Status.ESCALATED:
        escalation = task.escalations.open().first()
        if escalation is not None:
            lines.append(f"- Waiting for an answer: {escalation.detail}")
    if task.pr_url.startswith(("https://", "http://", "file://")):
        lines.append(f"- Pull request: {task.pr_url}")
    lines.append(f"- Cost so far: ${spent.cost_usd:.2f} over {spent.runs} run(s)")
    if not task.is_terminal:
        lines += ["", f"Commands (people with write access): {COMMANDS}."]
    lines += ["", progress_marker(task)]
    return "\n".join(lines)


def plan_body(task: Task, version: str) -> str:
    """spec.md, plan.md and tasks.md, which a person is asked to approve."""
    newest: dict[str, str] = {}
    rows = task.artifacts.filter(name__in=PLAN_DOCUMENTS).order_by(
        "name", "-created_at", "-id"
    )
    for name, content in rows.values_list("name", "content"):
        newest.setdefault(name, content)
    parts = [
        f"**Codex**: the plan for [{task.task_id}]({task_link(task)}) waits for "
        f"your approval (version `{version}`).",
        "",
        f"Approve with `@codex approve {version}`, or ask for changes with "
        "`@codex changes <what to change>` (or on the task page).",
    ]
    for name in PLAN_DOCUMENTS:
        content = newest.get(name, "(not written)")
        if len(content) > DOCUMENT_MAX_CHARS:
            content = (
                content[:DOCUMENT_MAX_CHARS] + "\n\n[cut; the rest is on the task page]"
            )
        parts += [
            "",
            f"<details><summary>{name}</summary>",
            "",
            content,
            "",
            "</details>",
        ]
    parts += ["", f"<!-- codex:plan:{task.task_id}:{version} -->"]
    return "\n".join(parts)


def _post_once(task: Task, forge, key: str, marker: str, body: str) -> dict:
    issue = task.issue_number
    return perform_once(
        key,
        lambda: dict(forge.comment(issue, body)),
        lookup=lambda: (
            None
            if (found := forge.find_comment(issue, marker)) is None
            else dict(found)
        ),
        task=task,
        kind="comment",
    )


def update_progress_comment(task_id: str) -> str:
    """The job: post or edit the task's progress comment (and post the plan
    when it waits for approval). Returns what it did."""
    # One edit of a task's comment at a time: two at once could land in the
    # wrong order, the older text last.
    with exclusive(f"progress-comment:{task_id}"):
        return _update(task_id)


def _update(task_id: str) -> str:
    # Before the task is read: a change from now on queues the next edit.
    edited_at, last_digest = ProgressEdit.take(task_id)
    task = Task.objects.with_repository(task_id)
    if task is None or not task.issue_number:
        return "no issue to comment on"
    forge = get_forge(task.repository)
    repository, issue = task.repository, task.issue_number
    gate = task.open_gate if task.status == Status.ESCALATED else None
    if gate is not None and gate.kind == GateKind.PLAN:
        _post_once(
            task,
            forge,
            f"issue:plan:{repository.pk}:{issue}:{task.task_id}:{gate.subject}",
            f"<!-- codex:plan:{task.task_id}:{gate.subject} -->",
            plan_body(task, gate.subject),
        )
    body = progress_body(task)
    comment = _post_once(
        task,
        forge,
        f"issue:progress:{repository.pk}:{issue}:{task.task_id}",
        progress_marker(task),
        body,
    )
    digest = _digest(body)
    if comment.get("body") == body and edited_at is None:
        ProgressEdit.edited(task.pk, digest)
        return "posted"
    if digest == last_digest:
        return "unchanged"
    since = (
        min_seconds()
        if edited_at is None
        else (timezone.now() - edited_at).total_seconds()
    )
    if since < min_seconds():
        # Queued without a delay (a broker that cannot hold a job back runs it
        # at once): wait here, then carry the newest state.
        time.sleep(min_seconds() - since)
        task.refresh_from_db()
        body = progress_body(task)
        digest = _digest(body)
    forge.edit_comment(int(comment["id"]), body)
    ProgressEdit.edited(task.pk, digest)
    return "edited"


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()
