"""The pipeline tools (agents.domain_tools): learnings, questions and spec 004's
status-updating tools, called directly and through the agent phase runner."""

from __future__ import annotations

import re

import pytest

from agents.domain_tools import (
    HUMAN_QUESTIONS,
    MAX_LEARNING_CHARS,
    NO_INSTANCE,
    DomainTools,
    domain_tools,
    role_of,
)
from agents.roles import RoleContext
from codex.fleet.models import InstanceStatus, InstanceType
from codex.fleet.models.instance import AgentInstance
from codex.fleet.tool_events import tool_events_for
from codex.repositories.models import Repository
from codex.tasks.jobs import advance_task
from codex.tasks.models import AgentQuestion, Learning
from codex.tasks.models.escalation import Escalation
from tests.agents_e2e.conftest import agent_settings, bare_repo  # noqa: F401
from tests.factories import make_task
from tests.model_stub import message, submit, tool_use

SPEC = "# Feature: x\n\n## Overview\nX.\n\n## Acceptance Criteria\n- x\n"
INTAKE = {"should_proceed": True, "needs_clarification": False, "spec_md": SPEC}

# The tool's own check, or the schema's (checked before the tool runs).
UNKNOWN = "unknown argument|Additional properties are not allowed"


def tools_of(task, phase="implementation", branch=""):
    """Every pipeline tool as the role of `phase` would call it, offered or
    not (the status tools' own behaviour)."""
    context = RoleContext(task=task, branch=branch)
    every = DomainTools(context, role_of(phase))._all_tools()
    return context, {tool.name: tool for tool in every}


def offered(task, phase="implementation"):
    return {t.name for t in domain_tools(RoleContext(task=task), phase=phase)}


def start_instance(task, type=InstanceType.CODING, branch="codex/x"):
    return AgentInstance.objects.start(
        type=type,
        repository=task.repository,
        issue_number=task.issue_number or 7,
        worktree_path="/worktrees/x",
        branch_name=branch,
        by="worker:test",
        task=task,
    )


@pytest.fixture
def task(db):
    return make_task(issue_number=7)


# -- the tool list ---------------------------------------------------------------


def test_the_tools_have_api_definitions(task):
    # The developer gets no status tool: the runner opens the pull request
    # and asks for the review itself.
    assert offered(task) == {"record_learning", "ask_question"}
    _, tools = tools_of(task)
    for tool in tools.values():
        definition = tool.definition()
        assert definition["input_schema"]["type"] == "object"
        assert definition["description"]
    # The developer (writer) cannot address itself.
    enum = tools["ask_question"].input_schema["properties"]["to"]["enum"]
    assert "developer" not in enum and "writer" not in enum and "human" in enum


@pytest.mark.parametrize(
    "phase, status_tools",
    [
        ("intake", set()),
        ("planning", set()),
        ("implementation", set()),
        ("verification", {"send_feedback"}),
        ("review", {"send_feedback"}),
        ("release", set()),
    ],
)
def test_each_role_has_the_status_tools_of_its_instance(task, phase, status_tools):
    assert offered(task, phase) == {"record_learning", "ask_question", *status_tools}


def test_an_unknown_phase_has_no_role(task):
    with pytest.raises(ValueError, match="no agent role"):
        domain_tools(RoleContext(task=task), phase="nowhere")


# -- record_learning -------------------------------------------------------------


def test_record_learning_keeps_it_for_the_repository(task):
    _, tools = tools_of(task, phase="verification")
    outcome = tools["record_learning"].call(
        {"type": "pattern_discovered", "content": "  Tests live in tests/.  "}
    )
    assert not outcome.is_error, outcome.content
    learning = Learning.objects.get()
    assert learning.repository == task.repository and learning.task == task
    assert (learning.agent, learning.type) == ("build", "pattern_discovered")
    assert learning.content == "Tests live in tests/."
    assert outcome.record.tool == "record_learning" and outcome.record.success
    assert outcome.record.metadata["type"] == "pattern_discovered"


@pytest.mark.parametrize(
    "arguments, reason",
    [
        ({"type": "Not A Slug", "content": "x"}, "slug"),
        ({"type": "", "content": "x"}, "slug"),
        ({"type": "x" * 51, "content": "x"}, "slug|too long"),
        ({"type": 3, "content": "x"}, "slug|not of type"),
        ({"type": "note", "content": "   "}, "must not be empty"),
        ({"type": "note", "content": "<!-- hidden -->"}, "must not be empty"),
        ({"type": "note", "content": 5}, "must be a string|not of type"),
        ({"type": "note"}, "must be a string|required property"),
        ({"type": "note", "content": "x" * (MAX_LEARNING_CHARS + 1)}, "limit|too long"),
        ({"type": "note", "content": "x", "agent": "human"}, UNKNOWN),
    ],
)
def test_record_learning_refuses_bad_input(task, arguments, reason):
    _, tools = tools_of(task)
    outcome = tools["record_learning"].call(arguments)
    assert outcome.is_error and re.search(reason, outcome.content)
    assert not outcome.record.success and outcome.record.error
    assert not Learning.objects.exists()


# -- ask_question ----------------------------------------------------------------


def test_a_question_to_another_role_is_recorded(task):
    context, tools = tools_of(task, phase="implementation")
    outcome = tools["ask_question"].call(
        {"to": "planner", "question": "Should mul accept floats?"}
    )
    assert not outcome.is_error
    assert outcome.content.startswith("recorded for the team;")
    question = AgentQuestion.objects.get()
    assert (question.task, question.from_role, question.to_role) == (
        task,
        "writer",
        "analyst",
    )
    assert question.question == "Should mul accept floats?" and not question.answered
    assert HUMAN_QUESTIONS not in context.extra


def test_a_question_to_a_person_marks_the_run_for_escalation(task):
    context, tools = tools_of(task, phase="intake")
    outcome = tools["ask_question"].call({"to": "human", "question": "Which API?"})
    assert not outcome.is_error and "person" in outcome.content
    question = AgentQuestion.objects.get()
    assert (question.from_role, question.to_role) == ("triage", "human")
    assert context.extra[HUMAN_QUESTIONS] == ["Which API?"]


@pytest.mark.parametrize(
    "arguments, reason",
    [
        ({"to": "boss", "question": "?"}, "to must be one of|is not one of"),
        ({"to": ["human"], "question": "?"}, "to must be one of|is not one of"),
        ({"question": "?"}, "to must be one of|required property"),
        ({"to": "developer", "question": "?"}, "ask another role|is not one of"),
        ({"to": "human", "question": ""}, "must not be empty"),
        ({"to": "human", "question": "x" * 5000}, "limit|too long"),
        ({"to": "human", "question": "?", "urgent": True}, UNKNOWN),
    ],
)
def test_ask_question_refuses_bad_input(task, arguments, reason):
    context, tools = tools_of(task, phase="implementation")
    outcome = tools["ask_question"].call(arguments)
    assert outcome.is_error and re.search(reason, outcome.content)
    assert not AgentQuestion.objects.exists()
    assert HUMAN_QUESTIONS not in context.extra


# -- spec 004's status-updating tools --------------------------------------------


@pytest.mark.parametrize(
    "name, arguments",
    [
        ("request_review", {}),
        ("create_pr", {"pr_number": 3}),
        ("send_feedback", {"feedback": "Rename x."}),
    ],
)
def test_without_an_instance_the_status_tools_refuse(task, name, arguments):
    _, tools = tools_of(
        task, phase="review" if name == "send_feedback" else "implementation"
    )
    outcome = tools[name].call(arguments)
    assert outcome.is_error and outcome.record.error == NO_INSTANCE


def test_request_review_moves_the_instance_to_waiting_review(task):
    instance = start_instance(task)
    _, tools = tools_of(task)
    outcome = tools["request_review"].call({"summary": "Ready."})
    assert not outcome.is_error, outcome.content
    instance.refresh_from_db()
    assert instance.status == InstanceStatus.WAITING_REVIEW
    assert instance.instance_id in outcome.content
    event = tool_events_for(instance).get()
    assert event.data["tool_name"] == "request_review" and event.data["success"]
    assert event.data["is_status_updating"] is True
    assert event.data["status_change"] == "waiting_review"
    assert event.data["metadata"] == {"summary": "Ready."}
    assert event.actor == f"agent:{instance.instance_id}"
    # The transition itself is in the instance's log, by the role.
    transition = instance.task.events.filter(data__transition="request_review").get()
    assert transition.actor == "agent:writer"


def test_request_review_refused_by_the_state_machine_is_an_error(task):
    review = start_instance(task, type=InstanceType.REVIEW)
    _, tools = tools_of(task, phase="implementation")
    outcome = tools["request_review"].call({})
    assert outcome.is_error and "not allowed" in outcome.content
    review.refresh_from_db()
    assert review.status == InstanceStatus.STARTED
    event = tool_events_for(review).get()
    assert event.data["success"] is False and event.data["error_message"]
    assert event.data["status_change"] == ""


def test_create_pr_records_the_pull_request(task):
    instance = start_instance(task)
    _, tools = tools_of(task)
    url = "https://github.com/o/r/pull/12"
    outcome = tools["create_pr"].call({"pr_number": 12, "pr_url": url})
    assert not outcome.is_error, outcome.content
    instance.refresh_from_db()
    assert instance.status == InstanceStatus.PR_CREATED
    assert (instance.pr_number, instance.pr_url) == (12, url)
    event = tool_events_for(instance).get()
    assert event.data["status_change"] == "pr_created"
    assert event.data["is_status_updating"] is True
    # A second pull request for the same instance is refused.
    again = tools["create_pr"].call({"pr_number": 13})
    assert again.is_error and "pr_created" in again.content


@pytest.mark.parametrize(
    "arguments, reason",
    [
        ({}, "pr_number"),
        ({"pr_number": 0}, "pr_number"),
        ({"pr_number": "12"}, "pr_number"),
        ({"pr_number": True}, "pr_number"),
        ({"pr_number": 1, "pr_url": "javascript:alert(1)"}, "pr_url"),
        ({"pr_number": 1, "pr_url": 5}, "pr_url"),
        ({"pr_number": 1, "draft": True}, UNKNOWN),
    ],
)
def test_create_pr_refuses_bad_input(task, arguments, reason):
    instance = start_instance(task)
    _, tools = tools_of(task)
    outcome = tools["create_pr"].call(arguments)
    assert outcome.is_error and re.search(reason, outcome.content)
    instance.refresh_from_db()
    assert instance.status == InstanceStatus.STARTED
    assert not tool_events_for(instance).exists()


def test_send_feedback_is_a_status_updating_event(task):
    review = start_instance(task, type=InstanceType.REVIEW)
    _, tools = tools_of(task, phase="review")
    outcome = tools["send_feedback"].call({"feedback": "Rename x to total."})
    assert not outcome.is_error, outcome.content
    event = tool_events_for(review).get()
    assert event.data["tool_name"] == "send_feedback"
    assert event.data["is_status_updating"] is True
    assert event.data["status_change"] == "started"
    assert event.data["metadata"]["feedback"] == "Rename x to total."
    assert tools["send_feedback"].call({"feedback": " "}).is_error
    assert tools["send_feedback"].call({}).is_error


def test_the_instance_on_the_runs_branch_is_preferred(task):
    mine = start_instance(task, branch="codex/mine")
    start_instance(task, branch="codex/other")  # newer, another branch
    _, tools = tools_of(task, branch="codex/mine")
    assert not tools["request_review"].call({}).is_error
    mine.refresh_from_db()
    assert mine.status == InstanceStatus.WAITING_REVIEW


def test_a_terminated_instance_is_not_this_runs(task):
    instance = start_instance(task)
    instance.perform("terminate", by="test")
    _, tools = tools_of(task)
    assert tools["request_review"].call({}).record.error == NO_INSTANCE


# -- through the phase runner ----------------------------------------------------


@pytest.fixture
def repository(bare_repo):  # noqa: F811 (the imported fixture)
    return Repository.objects.create(url=f"file://{bare_repo}")


def system_text(body):
    return "\n".join(block["text"] for block in body["system"])


@pytest.mark.django_db(transaction=True)
def test_a_learning_reaches_the_next_tasks_system_prompt(
    agent_settings,  # noqa: F811 (the imported fixture)
    stub,
    repository,
):
    stub.add(
        message(
            tool_use(
                "record_learning",
                {"type": "convention", "content": "calc.py holds pure functions."},
            )
        ),
        submit(INTAKE),
        submit(INTAKE),
    )
    first = make_task(repository, title="First")
    second = make_task(repository, title="Second")

    assert advance_task(first.task_id) == "in_progress/planning"
    assert "calc.py holds pure functions" not in system_text(stub.bodies[0])
    learning = Learning.objects.get()
    assert (learning.agent, learning.task_id) == ("triage", first.pk)
    tools = first.events.filter(kind="tool").values_list("data__tool", flat=True)
    assert "record_learning" in set(tools)
    # The tools were offered to the model next to the sandbox's.
    offered = {tool["name"] for tool in stub.bodies[0]["tools"]}
    assert {"read_file", "record_learning", "ask_question"} <= offered
    assert "create_pr" not in offered  # triage has no status tools

    advance_task(second.task_id)
    system = system_text(stub.bodies[-1])
    assert "Learnings from earlier work on this repository" in system
    assert "(convention) calc.py holds pure functions." in system


@pytest.mark.django_db(transaction=True)
def test_a_question_to_a_person_escalates_the_phase(
    agent_settings,  # noqa: F811 (the imported fixture)
    stub,
    repository,
):
    stub.add(
        message(
            tool_use("ask_question", {"to": "human", "question": "Floats or ints?"})
        ),
        # The agent submits anyway: the question still wins.
        submit(INTAKE),
    )
    task = make_task(repository)

    advance_task(task.task_id)
    task.refresh_from_db()

    assert task.status == "escalated", task.status
    escalation = Escalation.objects.get(task=task)
    assert escalation.reason == "needs_clarification"
    assert escalation.detail == "the agent asked a person"
    assert escalation.questions == ["Floats or ints?"]
    assert AgentQuestion.objects.get(task=task).to_role == "human"
    assert not task.artifacts.filter(name="spec.md").exists()
