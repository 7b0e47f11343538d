"""`pull_request` closed (merged or not) and `pull_request_review` submitted."""

from __future__ import annotations

from django.db import transaction
from django_fsm import can_proceed

from codex.core.store import LeaseUnavailable, VersionConflict
from codex.core.workers import enqueue_on_commit
from codex.events.models import Event, EventKind
from codex.fleet.models import AgentInstance, InstanceStatus
from codex.tasks.models import (
    Decider,
    GateDecision,
    GateKind,
    GateRefused,
    Phase,
    ReviewReport,
    Status,
    Task,
)
from codex.tasks.models.queryset import ADVANCE_JOB
from codex.tasks.models.reports import Recommendation
from codex.webhooks.handlers.common import (
    Context,
    Result,
    deferred,
    ignored,
    obj,
    processed,
    sender_can_write,
    task_for_pull_request,
)


def handle_pull_request(context: Context) -> Result:
    """closed: the pull request's agent instances become merged or closed; a
    merge of a task's pull request in release sets pr_merged and advances it
    (the release step then completes it). Closed unmerged: the instances are
    closed and the task's history says so; what to do next is a person's call.
    """
    if context.action != "closed":
        return ignored(f"pull_request.{context.action} needs nothing")
    pull = obj(context.payload.get("pull_request"))
    number = pull.get("number")
    if not isinstance(number, int):
        return ignored("no pull request number")
    merged = pull.get("merged") is True
    transition = "merged" if merged else "closed"
    moved = _move_instances(context, number, transition)
    task = task_for_pull_request(
        context.repository,
        html_url=str(pull.get("html_url") or ""),
        head=str(obj(pull.get("head")).get("ref") or ""),
    )
    parts = [f"{moved} instance(s) {transition}"]
    if task is not None:
        outcome = _update_task(context, task, number, merged=merged)
        if outcome is not None:
            return outcome
        parts.append(f"task {task.task_id} informed")
    return processed(f"pull request #{number} {transition}: " + "; ".join(parts))


def _move_instances(context: Context, number: int, transition: str) -> int:
    moved = 0
    instances = AgentInstance.objects.filter(
        repository=context.repository,
        pr_number=number,
        status=InstanceStatus.PR_CREATED,
    )
    for instance in instances:
        for _ in range(3):  # a heartbeat or another transition may race us
            if not can_proceed(getattr(instance, transition)):
                break
            try:
                instance.perform(
                    transition,
                    by=context.actor,
                    reason=f"pull request #{number} {transition} on GitHub",
                )
                moved += 1
                break
            except VersionConflict:
                instance.refresh_from_db()
    return moved


def _update_task(
    context: Context, task: Task, number: int, *, merged: bool
) -> Result | None:
    """Record the close on the task; a merge in release also sets pr_merged
    under the task's lease. Returns a Result only when deferred."""
    reason = (
        f"pull request #{number} merged on GitHub"
        if merged
        else f"pull request #{number} closed without merging on GitHub"
    )
    data = {"delivery": context.delivery.delivery_id, "pr_number": number}
    if not (merged and task.phase == Phase.RELEASE and not task.is_terminal):
        if merged and task.pr_merged:
            return None  # already known (redelivery, or the release step merged)
        Event.log(
            EventKind.WEBHOOK, actor=context.actor, reason=reason, task=task, data=data
        )
        return None
    if task.pr_merged:
        return None
    try:
        task.acquire_lease(context.actor, attempts=1)
    except LeaseUnavailable:
        return deferred(f"task {task.task_id} is busy; the merge is applied later")
    try:
        with transaction.atomic():
            task.pr_merged = True
            task.record(EventKind.WEBHOOK, by=context.actor, reason=reason, data=data)
            if task.status == Status.ESCALATED and can_proceed(task.notice_merge):
                # A person merged what waited at the merge gate (docs/gates.md).
                task.take_merge(by=context.actor, reason=reason)
            task.save(release_lease=True)
            if task.status == Status.IN_PROGRESS:
                enqueue_on_commit(ADVANCE_JOB, task.task_id)
    finally:
        if task.held_lease:
            task.release_lease()
    return None


def handle_review(context: Context) -> Result:
    """A review requesting changes, from someone with write access, goes into
    the review loop: an event on the task always; while the task is in review,
    the review report of the current cycle becomes (or gets merged into) a
    request_changes report carrying the review as a blocking comment and in
    `feedback["human_reviews"]`, and the task is advanced so the loop runs.

    Limitation, stated plainly: the review step stores its own report for the
    same cycle with `update_or_create`, so the reviewer agent's verdict on
    its next run replaces these fields rather than adding to them; the
    human's review always stays in the event log.
    """
    if context.action != "submitted":
        return ignored(f"pull_request_review.{context.action} needs nothing")
    review = obj(context.payload.get("review"))
    if str(review.get("state") or "").lower() == "approved":
        return _approve_merge_gate(context, review)
    if str(review.get("state") or "").lower() != "changes_requested":
        return ignored(f"review state {review.get('state')!r} needs nothing")
    pull = obj(context.payload.get("pull_request"))
    task = task_for_pull_request(
        context.repository,
        html_url=str(pull.get("html_url") or ""),
        head=str(obj(pull.get("head")).get("ref") or ""),
    )
    if task is None:
        return ignored("no task for this pull request")
    if not sender_can_write(context):
        return ignored(f"{context.sender} has no write access; review not used")
    body = str(review.get("body") or "").strip()
    human = {
        "id": review.get("id"),
        "by": context.sender,
        "body": body,
        "url": str(review.get("html_url") or ""),
        "submitted_at": str(review.get("submitted_at") or ""),
    }
    Event.log(
        EventKind.WEBHOOK,
        actor=context.actor,
        reason=f"changes requested on the pull request by {context.sender}",
        task=task,
        data={"delivery": context.delivery.delivery_id, "review": human},
    )
    if not (task.phase == Phase.REVIEW and task.status == Status.IN_PROGRESS):
        return processed(
            f"review recorded on {task.task_id} ({task.status}, {task.phase})"
        )
    cycle = task.review_cycles + 1
    with transaction.atomic():
        report, _ = ReviewReport.objects.select_for_update().get_or_create(
            task=task,
            cycle=cycle,
            defaults={
                "pr_url": task.pr_url,
                "assessment": Recommendation.REQUEST_CHANGES,
            },
        )
        _merge_human_review(report, human)
        enqueue_on_commit(ADVANCE_JOB, task.task_id)
    return processed(f"review fed into {task.task_id}'s review cycle {cycle}")


def _approve_merge_gate(context: Context, review: dict) -> Result:
    """An approving review from someone with write access, other than the
    requester, decides a task's open merge gate at the reviewed commit
    (docs/gates.md); the release step then merges."""
    pull = obj(context.payload.get("pull_request"))
    task = task_for_pull_request(
        context.repository,
        html_url=str(pull.get("html_url") or ""),
        head=str(obj(pull.get("head")).get("ref") or ""),
    )
    if task is None:
        return ignored("no task for this pull request")
    gate = task.open_gate
    if gate is None or gate.kind != GateKind.MERGE:
        return ignored(f"{task.task_id} is not waiting for a merge approval")
    decider = Decider(
        label=context.actor,
        login=context.sender,
        may_approve=not context.sender_is_bot and sender_can_write(context),
    )
    try:
        task.decide_gate(
            GateDecision.APPROVED,
            decider=decider,
            subject=str(review.get("commit_id") or ""),
        )
    except GateRefused as refused:
        Event.log(
            EventKind.CONTROL,
            actor=context.actor,
            reason=f"merge approval not accepted: {refused.reason}",
            task=task,
            data={"delivery": context.delivery.delivery_id},
        )
        return ignored(f"approval not accepted: {refused.reason}")
    except LeaseUnavailable:
        return deferred(f"task {task.task_id} is busy; the approval is applied later")
    return processed(f"merge of {task.task_id} approved by {context.sender}")


def _merge_human_review(report: ReviewReport, human: dict) -> None:
    comment_id = f"github-review-{human['id']}"
    feedback = dict(report.feedback or {})
    reviews = [
        r for r in feedback.get("human_reviews", []) if r.get("id") != human["id"]
    ]
    feedback["human_reviews"] = [*reviews, human]
    comments = [c for c in report.comments or [] if c.get("id") != comment_id]
    comments.append(
        {
            "id": comment_id,
            "severity": "blocking",
            "file": "",
            "line": None,
            "issue": human["body"] or "Changes requested on GitHub.",
            "suggestion": "",
            "category": "human_review",
        }
    )
    feedback.setdefault("message", human["body"])
    report.comments = comments
    report.feedback = feedback
    report.tally_comments()
    report.assessment = Recommendation.REQUEST_CHANGES
    report.save(update_fields=["comments", "feedback", "assessment"])
