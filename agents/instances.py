"""The agent instance every phase run works through
(docs/domain/fleet.md#agent-instance).

Each phase's role runs as an AgentInstance of the task; the phase runner calls
`begin_phase_instance` before the agent starts and `end_phase_instance` with
the step's PhaseResult. Which instance, and how it relates to the others:

| phase (role) | instance | parent, relationship |
|---|---|---|
| intake (triage) | planning-a<n> | |
| planning (analyst) | planning-a<n> | |
| implementation (writer) | work-<issue>-a<n> | planning_to_issue from planning |
| verification (build) | review-<issue>-a<n> | the coding instance |
| review (reviewer) | review-<issue>-a<n> | the coding one, spawned_review |
| release (committer) | the coding instance itself | |

(Without a GitHub issue the ids are work-a<n> and review-a<n>.)

An instance not terminated is reused by the next run of its task and role (a
retry, the developer's next cycle after feedback); a run is linked to it
(`AgentRun.instance`) and stamps its process. Through the instance's state
machine:

- the review phase spawns its reviewer with `spawn_review`: the coding
  instance goes to waiting_review and the spawned_review relationship counts
  the iteration. The configured review.max_iterations binds: past it the
  review is refused (ReviewLimitReached, out of the step: the task escalates
  with the reason, codex.tasks.jobs); when the coding instance cannot take a
  review for another reason (its status), the reviewer still runs, as a child
  without the relationship, and the event says why;
- an approving review moves the coding instance to pr_created with the task's
  pull request (the instance model creates it after the review; Codex
  opens it as a draft earlier, and counts it "created" when it is ready), and
  the release's merge moves it to pr_merged;
- the agents' own status tools (request_review, create_pr, send_feedback in
  agents.domain_tools) act on the run's instance.

A run that ends "done" ends the session of a planning or review instance
(terminated: its work is over); the coding instance waits for its review and
merge. A "failed" step terminates the instance. A blocked or escalated step
leaves it for the retry or the answer. The task's end stops what is left:
codex.tasks.jobs.clean_up_task terminates the instances of failed and
cancelled tasks, and a completed release terminates its task's here.
"""

from __future__ import annotations

import logging
import os
import re
from typing import TYPE_CHECKING

from django.db import transaction
from django_fsm import TransitionNotAllowed

from agents.team import role_of
from codex.core.machine import machine_name
from codex.core.store import VersionConflict
from codex.fleet.models import (
    AgentInstance,
    AgentRun,
    InstanceRelationship,
    InstanceStatus,
    InstanceType,
    RelationshipType,
    step_run,
)
from codex.fleet.reviews import record_review_verdict, spawn_review
from codex.tasks.models import Role

if TYPE_CHECKING:
    from codex.tasks.models import Task
    from codex.tasks.runners import PhaseResult

logger = logging.getLogger(__name__)

ACTOR = "system:phase-runner"
INSTANCE_TYPES = {
    Role.TRIAGE: InstanceType.PLANNING,
    Role.ANALYST: InstanceType.PLANNING,
    Role.WRITER: InstanceType.CODING,
    Role.BUILD: InstanceType.REVIEW,
    Role.REVIEWER: InstanceType.REVIEW,
}
# The release manager finishes the coding agent's pull request: it runs
# through the coding instance rather than a sixth instance.
SHARED_INSTANCE = {Role.COMMITTER: Role.WRITER}
PR_NUMBER = re.compile(r"/(\d+)/?$")


def instance_role(phase: str) -> str:
    """The role whose instance a run in `phase` works through."""
    role = role_of(phase)
    return SHARED_INSTANCE.get(role, role)


def current_instance(task: Task, role: str) -> AgentInstance | None:
    """The task's instance of `role` not terminated, newest first."""
    return AgentInstance.objects.current(task.pk, role)


def running_run(task: Task) -> AgentRun | None:
    """The task's running agent run: the step's own (advance_task begins one
    per step and names it with codex.fleet.models.running_step), else the
    newest running one."""
    run = step_run()
    if run is not None and run.task_id == task.pk:
        return run
    return (
        AgentRun.objects.running()
        .filter(task=task)
        .order_by("-started_at", "-id")
        .first()
    )


def begin_phase_instance(
    task: Task, *, worktree: str, branch: str, system_prompt: str = ""
) -> AgentInstance:
    """The instance the run of the task's current phase works through: the
    role's one not terminated, else a new one (spawned and related as the
    module describes). Links the task's running AgentRun to it and stamps this
    process on it."""
    role = instance_role(task.phase)
    run = running_run(task)
    process = {
        "pid": os.getpid(),
        "host": machine_name(),
        "session_name": run.session_id if run is not None else "",
    }
    instance = current_instance(task, role)
    if instance is None:
        # Started with its process: no UPDATE to attach it afterwards.
        process = AgentInstance.process_values(**process)
        instance = _start(task, role, worktree, branch, system_prompt, process)
    else:
        instance.attach_process(**process)
    if run is not None and run.instance_id is None:
        # Not state: no version bump (the worker holds the run object).
        run.write_unversioned(instance_id=instance.pk)
    return instance


def _start(
    task: Task,
    role: str,
    worktree: str,
    branch: str,
    system_prompt: str,
    process: dict,
) -> AgentInstance:
    type_ = INSTANCE_TYPES[role]
    fields = {
        "repository": task.repository,
        "task": task,
        "role": role,
        "worktree_path": worktree,
        "branch_name": branch,
        "base_branch": task.repository.default_branch,
        "system_prompt": system_prompt,
        "by": ACTOR,
        **process,
    }
    issue = task.issue_number
    if type_ == InstanceType.PLANNING:
        return AgentInstance.objects.start(
            type=type_, reason=f"{role} of {task.task_id} started", **fields
        )
    if type_ == InstanceType.CODING:
        with transaction.atomic():
            coding = AgentInstance.objects.start(
                type=type_,
                issue_number=issue,
                reason=f"{role} of {task.task_id} started",
                **fields,
            )
            planner = (
                AgentInstance.objects.filter(task=task, type=InstanceType.PLANNING)
                .order_by("-created_at", "-id")
                .first()
            )
            if planner is not None:
                InstanceRelationship.objects.create(
                    parent=planner,
                    child=coding,
                    relationship_type=RelationshipType.PLANNING_TO_ISSUE,
                    metadata={"task": task.task_id, "issue_number": issue},
                )
        return coding
    coding = current_instance(task, Role.WRITER)
    if coding is None:
        return AgentInstance.objects.start(
            type=type_,
            issue_number=issue,
            reason=f"{role} of {task.task_id} started (no coding instance to review)",
            **fields,
        )
    if role == Role.REVIEWER:
        try:
            return spawn_review(
                coding,
                by=ACTOR,
                worktree_path=worktree,
                branch_name=branch,
                reason=f"the review phase of {task.task_id} started",
                metadata={"task": task.task_id, "phase": task.phase},
                role=role,
                system_prompt=system_prompt,
                base_branch=task.repository.default_branch,
                **process,
            )
        except (TransitionNotAllowed, VersionConflict) as exc:
            coding.refresh_from_db()
            why = (
                f"{coding.instance_id} cannot request another review "
                f"({coding.status}, {coding.current_review_iteration()} so far): "
                f"{exc}"
            )
        reason = f"{role} of {task.task_id} started; not a spawned review: {why}"
    else:
        reason = f"{role} of {task.task_id} started to verify {coding.instance_id}"
    return AgentInstance.objects.start(
        type=type_,
        issue_number=coding.issue_number,
        parent=coding,
        reason=reason,
        **fields,
    )


def end_phase_instance(
    instance: AgentInstance, task: Task, result: PhaseResult
) -> AgentInstance:
    """What the step's result means for its instance (see the module's
    docstring). Returns the instance as it is now.

    Bookkeeping must not undo the step: an instance changed meanwhile by
    someone else (an operator, the GitHub sync) is left as they left it, and
    the step's result stands."""
    try:
        return _end(instance, task, result)
    except (TransitionNotAllowed, VersionConflict) as exc:
        logger.warning(
            "ending %s after %s's %s step: %s",
            instance.instance_id,
            task.task_id,
            task.phase,
            exc,
        )
        instance.refresh_from_db()
        instance.beat(active=True)  # the step's last sign of life all the same
        return instance


def _end(instance: AgentInstance, task: Task, result: PhaseResult) -> AgentInstance:
    instance.refresh_from_db()
    outcome = result.outcome
    if instance.status == InstanceStatus.TERMINATED or outcome not in (
        "failed",
        "done",
    ):
        # Stopped meanwhile (the task ended, an operator), or parked (blocked,
        # escalated) for the retry or the answer.
        instance.beat(active=True)
        return instance
    if outcome == "failed":
        return _terminate(instance, f"its run failed: {result.reason}"[:500])
    if instance.type in (InstanceType.PLANNING, InstanceType.REVIEW):
        if instance.role == Role.REVIEWER:
            record_review_verdict(instance, approved=_approved(result))
        if instance.role == Role.REVIEWER and _approved(result):
            _pr_created(instance.parent, task)
        return _terminate(instance, f"{instance.role} run of {task.phase} done")
    instance.beat(active=True)
    if task.phase == "release" and result.merged:
        _pr_created(instance, task)
        instance.refresh_from_db()
        if instance.status == InstanceStatus.PR_CREATED:
            instance.perform("merged", by=ACTOR, reason="the release merged it")
        stop_task_instances(task, reason="the task was released")
        instance.refresh_from_db()
    return instance


def _terminate(instance: AgentInstance, reason: str) -> AgentInstance:
    """The step's end ends the instance; its last heartbeat goes with it."""
    instance.perform(
        "terminate",
        by=ACTOR,
        reason=reason,
        also=instance.heartbeat_values(active=True),
    )
    return instance


def _approved(result: PhaseResult) -> bool:
    return bool(result.review) and result.review.get("assessment") == "approve"


def _pr_created(coding: AgentInstance | None, task: Task) -> None:
    """The reviewed pull request counts as created (PR_CREATED,
    docs/domain/fleet.md#instance-status)."""
    if coding is None or coding.status not in (
        InstanceStatus.STARTED,
        InstanceStatus.WAITING_REVIEW,
    ):
        return
    match = PR_NUMBER.search(task.pr_url or "")
    if match is None:
        return
    coding.perform(
        "create_pr",
        by=ACTOR,
        pr_number=int(match.group(1)),
        pr_url=task.pr_url,
        reason="the review approved the pull request",
    )


def stop_task_instances(task: Task, *, reason: str) -> list[str]:
    """Terminate every instance of `task` not terminated yet; their ids."""
    stopped = []
    for instance in AgentInstance.objects.running().filter(task=task):
        try:
            instance.perform("terminate", by=ACTOR, reason=reason)
        except (TransitionNotAllowed, VersionConflict):
            continue  # someone else stopped it first
        stopped.append(instance.instance_id)
    return stopped


__all__ = [
    "begin_phase_instance",
    "current_instance",
    "end_phase_instance",
    "instance_role",
    "stop_task_instances",
]
