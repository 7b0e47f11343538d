"""Test data for the API's resources, one of each, shared by the API tests."""

from __future__ import annotations

from dataclasses import dataclass

from codex.tasks.models import Escalation, Task
from tests.children.factories import make_fan_out, post
from tests.claims.factories import make_backlog_run, make_claim
from tests.factories import make_repository, make_task, put_in_state
from tests.fleet.factories import make_instance, make_run


def make_escalation(task: Task | None = None, questions=None) -> Escalation:
    """An escalated task with its open escalation."""
    task = put_in_state(task or make_task(), status="escalated", phase="intake")
    return Escalation.objects.create(
        task=task,
        phase=task.phase,
        reason="needs_clarification",
        detail="Which login providers?",
        questions=["Which providers?"] if questions is None else questions,
    )


@dataclass
class World:
    task: Task
    escalation: Escalation
    repository_id: int
    instance_id: int
    run_id: int
    claim_id: int
    backlog_run_id: int
    child_report_id: int


def make_world() -> World:
    repository = make_repository("https://github.com/acme/world")
    task = make_task(repository)
    escalation = make_escalation()
    fan_out = make_fan_out(2)
    post(fan_out, "🤖 Child C1 complete: PR #11")
    return World(
        task=task,
        escalation=escalation,
        repository_id=repository.pk,
        instance_id=make_instance(repository=repository).pk,
        run_id=make_run().pk,
        claim_id=make_claim(repository).pk,
        backlog_run_id=make_backlog_run(repository).pk,
        child_report_id=fan_out.reports.get().pk,
    )
