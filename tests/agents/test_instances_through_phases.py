"""Every phase run works through an agent instance of spec 004 (agents.instances):
created or reused per task and role, linked to the step's AgentRun, related to
the task's other instances, moved by the agents' status tools and by the
pipeline, and stopped when the task ends. Through the real SDK against the
loopback Messages API, on the local forge."""

from __future__ import annotations

import pytest

from codex.events.models import Event
from codex.fleet.models import (
    AgentInstance,
    AgentRun,
    InstanceRelationship,
    InstanceStatus,
)
from codex.fleet.tool_events import tool_events_for
from codex.repositories.models import Repository
from codex.tasks.jobs import advance_task, clean_up_task
from tests.agents_e2e.conftest import agent_settings, bare_repo  # noqa: F401
from tests.agents_e2e.test_agents_end_to_end import (
    MUL_BROKEN,
    MUL_OK,
    QA_APPROVE,
    RELEASE,
    REVIEW_APPROVE,
    TEST_MUL,
    intake_and_planning,
)
from tests.factories import make_task, put_in_state
from tests.model_stub import error, message, submit, tool_use

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def repository(bare_repo):  # noqa: F811 (the imported fixture)
    return Repository.objects.create(url=f"file://{bare_repo}")


def implementation(calc: str, *, request_review: bool = False, answers=()):
    """The developer writes the change; in a feedback cycle it answers the
    findings `answers` (ids) as fixed. (It has no request_review tool: the
    runner asks for the review; calling it is an unknown tool.)"""
    first = [
        tool_use("write_file", {"path": "calc.py", "content": calc}),
        tool_use("write_file", {"path": "test_mul.py", "content": TEST_MUL}),
    ]
    if request_review:
        first.append(tool_use("request_review", {"summary": "mul is ready"}))
    return [
        message(*first),
        submit(
            {
                "summary": "Added mul and its test.",
                "commit_message": "Add mul",
                "tasks_completed": 1,
                **(
                    {
                        "feedback_responses": [
                            {"id": i, "status": "fixed", "note": "fixed"}
                            for i in answers
                        ]
                    }
                    if answers
                    else {}
                ),
            }
        ),
    ]


def instances(task) -> dict[str, AgentInstance]:
    return {
        i.instance_id: i
        for i in AgentInstance.objects.filter(task=task).order_by("created_at", "id")
    }


def transitions(instance: AgentInstance) -> list[str]:
    return list(
        Event.objects.filter(subject=instance.event_subject, kind="instance")
        .order_by("id")
        .values_list("data__transition", flat=True)
    )


def test_each_phase_runs_through_its_instance_to_the_merge(
    agent_settings,  # noqa: F811 (the imported fixture)
    stub,
    repository,
):
    review_with_feedback = message(
        tool_use("send_feedback", {"feedback": "Looks right; keep it small."})
    )
    stub.add(
        *intake_and_planning(),
        *implementation(MUL_OK),
        QA_APPROVE,
        review_with_feedback,
        REVIEW_APPROVE,
        RELEASE,
    )
    task = make_task(repository, title="Add multiplication", issue_number=7)

    # Intake: the triage agent's planning instance, linked to the step's run,
    # ends with its run.
    assert advance_task(task.task_id) == "in_progress/planning"
    (triage,) = instances(task).values()
    assert (triage.instance_id, triage.role, triage.type) == (
        "planning-a1",
        "triage",
        "planning",
    )
    assert triage.status == InstanceStatus.TERMINATED
    run = AgentRun.objects.get(task=task)
    assert run.instance == triage and run.status == "succeeded"
    assert triage.session_name == run.session_id and triage.process_id

    for _ in range(5):
        advance_task(task.task_id)
    task.refresh_from_db()
    assert task.status == "completed" and task.pr_merged

    found = instances(task)
    assert list(found) == [
        "planning-a1",
        "planning-a2",
        "work-7-a1",
        "review-7-a1",
        "review-7-a2",
    ]
    analyst, coding, qa, reviewer = (
        found["planning-a2"],
        found["work-7-a1"],
        found["review-7-a1"],
        found["review-7-a2"],
    )
    assert [i.role for i in (analyst, coding, qa, reviewer)] == [
        "analyst",
        "writer",
        "build",
        "reviewer",
    ]
    # Every run worked through its role's instance; release through the coding one.
    runs = AgentRun.objects.filter(task=task).order_by("started_at", "id")
    assert [r.instance.instance_id for r in runs] == [
        "planning-a1",
        "planning-a2",
        "work-7-a1",
        "review-7-a1",
        "review-7-a2",
        "work-7-a1",
    ]
    # Spec 004's relationships: planning → issue, coding → its reviewer.
    links = {
        (link.parent.instance_id, link.child.instance_id, link.relationship_type)
        for link in InstanceRelationship.objects.all()
    }
    assert links == {
        ("planning-a2", "work-7-a1", "planning_to_issue"),
        ("work-7-a1", "review-7-a2", "spawned_review"),
    }
    assert qa.parent == coding and reviewer.parent == coding
    assert reviewer.parent_relationships.get().review_iteration == 1
    # The coding instance's life: the spawned review (the runner asks for it;
    # the developer has no tool claiming to), the approved pull request, the
    # merge, and the end.
    assert transitions(coding) == [
        None,  # started (the creation event)
        "request_review",
        "create_pr",
        "merged",
        "terminate",
    ]
    assert coding.status == InstanceStatus.TERMINATED
    assert coding.pr_url == task.pr_url and coding.pr_number
    feedback = tool_events_for(reviewer).get()
    assert feedback.data["tool_name"] == "send_feedback"
    assert feedback.data["metadata"]["feedback"] == "Looks right; keep it small."
    assert all(i.status == InstanceStatus.TERMINATED for i in found.values())


def test_the_coding_instance_is_reused_across_feedback_cycles(
    agent_settings,  # noqa: F811 (the imported fixture)
    stub,
    repository,
):
    stub.add(
        *intake_and_planning(),
        *implementation(MUL_BROKEN, request_review=False),
        QA_APPROVE,
        *implementation(MUL_OK, request_review=False, answers=["Q001"]),
    )
    task = make_task(repository, title="Add multiplication")  # no GitHub issue

    for _ in range(5):
        advance_task(task.task_id)
    task.refresh_from_db()
    assert (task.phase, task.verification_cycles) == ("verification", 1)

    found = instances(task)
    # Without an issue the ids are numbered per repository.
    assert list(found) == ["planning-a1", "planning-a2", "work-a1", "review-a1"]
    coding = found["work-a1"]
    assert coding.status == InstanceStatus.STARTED  # parked for its review
    assert coding.runs.count() == 2  # both developer runs
    # QA verifies the coding instance without counting a review iteration.
    assert found["review-a1"].parent == coding
    assert not InstanceRelationship.objects.filter(
        relationship_type="spawned_review"
    ).exists()

    # The task ends without completing: settlement stops what is left.
    task.perform("cancel", by="user:alice", reason="not needed")
    clean_up_task(task.task_id)
    coding.refresh_from_db()
    assert coding.status == InstanceStatus.TERMINATED


def test_a_blocked_step_keeps_its_instance_for_the_retry(
    agent_settings,  # noqa: F811 (the imported fixture)
    stub,
    repository,
):
    # Longer than an in-conversation retry may wait: the step blocks instead.
    stub.add(error(529, retry_after=3600))
    task = make_task(repository, issue_number=9)

    advance_task(task.task_id)
    task.refresh_from_db()
    assert task.status == "blocked"
    (triage,) = instances(task).values()
    assert triage.status == InstanceStatus.STARTED  # parked for the retry
    assert AgentRun.objects.get(task=task).instance == triage

    # The retry reuses it.
    put_in_state(task, status="in_progress")
    stub.add(*intake_and_planning()[1:2])
    assert advance_task(task.task_id) == "in_progress/planning"
    assert list(instances(task)) == ["planning-a1"]
    triage.refresh_from_db()
    assert triage.status == InstanceStatus.TERMINATED
    assert triage.runs.count() == 2
