"""`review.max_iterations` binds the review loop of a run
(docs/domain/fleet.md#review-loop): with it at 1 in the database, the first
review runs, the developer answers it, and the second review is refused
before its agent starts; the task escalates with the reason. The limit is
the configuration table's:

    ('review.max_iterations', '3', FALSE), -- Maximum review loops per coding agent
    CHECK (review_iteration > 0 AND review_iteration <= 5)

Run for real on PostgreSQL too (DATABASE_URL)."""

from __future__ import annotations

import pytest

from codex.configuration.models import Setting
from codex.fleet.models import AgentInstance, InstanceRelationship, InstanceType
from codex.repositories.models import Repository
from codex.tasks.jobs import advance_task
from tests.agents_e2e.test_agents_end_to_end import (
    MUL_OK,
    QA_APPROVE,
    implementation,
    intake_and_planning,
    steps,
)
from tests.agents_e2e.test_it_carries_review_findings_to_the_developer import (
    REVIEW_WITH_FINDINGS,
)
from tests.factories import make_task

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def repository(bare_repo):
    return Repository.objects.create(url=f"file://{bare_repo}")


def second_review_is_refused(stub, repository) -> None:
    Setting.objects.put("review.max_iterations", 1, actor="user:alice")
    stub.add(
        *intake_and_planning(),
        *implementation(MUL_OK),
        QA_APPROVE,
        REVIEW_WITH_FINDINGS,
    )
    task = make_task(repository, title="Add multiplication")
    assert steps(task, 5)[-1] == "in_progress/implementation"
    stub.add(*implementation(MUL_OK, answers=("R001", "R002")), QA_APPROVE)
    assert steps(task, 2)[-1] == "in_progress/review"
    asked = len(stub.bodies)

    assert advance_task(task.task_id) == "escalated/review"

    assert len(stub.bodies) == asked  # the reviewer's agent never started
    task.refresh_from_db()
    assert task.review_cycles == 1  # the task's own loop had a cycle left
    escalation = task.escalations.get()
    assert escalation.reason == "review_max_iterations"
    assert escalation.phase == "review"
    assert "review.max_iterations is 1" in escalation.detail
    coding = AgentInstance.objects.get(task=task, type=InstanceType.CODING)
    assert coding.current_review_iteration() == 1
    assert InstanceRelationship.objects.filter(parent=coding).count() == 1
    reviews = AgentInstance.objects.filter(task=task, role="reviewer")
    assert reviews.count() == 1  # no second review instance, linked or not


def test_a_second_review_in_a_run_is_refused_and_the_task_escalates(
    agent_settings, stub, repository
):
    agent_settings.CODEX_REVIEW_POST_COMMENTS = False
    second_review_is_refused(stub, repository)


@pytest.mark.postgresql
def test_on_postgresql_a_second_review_is_refused_and_the_task_escalates(
    agent_settings, stub, repository
):
    agent_settings.CODEX_REVIEW_POST_COMMENTS = False
    second_review_is_refused(stub, repository)
