"""Spec 003 "Asking Questions": a question to another role is answered by that
role's agent (one short model call through the run's client, with the target
role's system prompt, the task and its documents), the answer is the tool's
result, written on the question and logged; the call counts in the run's usage.
Through the real SDK against the loopback Messages API."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.answers import ANSWER_MAX_TOKENS
from agents.domain_tools import MAX_ANSWERS_PER_RUN, domain_tools
from agents.roles import RoleContext, role_for
from codex.events.models import Event
from codex.fleet.models import AgentRun
from codex.repositories.models import Repository
from codex.tasks.jobs import advance_task
from codex.tasks.models import AgentQuestion, Artifact
from integrations.anthropic.client import Usage
from tests.agents_e2e.conftest import agent_settings, bare_repo  # noqa: F401
from tests.agents_e2e.test_agents_end_to_end import intake_and_planning
from tests.factories import make_task
from tests.model_stub import error, message, tool_use

PLAN = "# Implementation Plan\n\nmul(a, b) takes ints only."
USAGE = {"input_tokens": 900, "output_tokens": 40}


@pytest.fixture
def task(db):
    task = make_task(issue_number=7, title="Add multiplication")
    Artifact.store_all(task, {"plan.md": PLAN})
    return task


def ask(task, client, question="Should mul accept floats?", to="planner"):
    context = RoleContext(task=task, client=client)
    tools = {t.name: t for t in domain_tools(context, phase="implementation")}
    return context, tools["ask_question"].call({"to": to, "question": question})


def system_text(body) -> str:
    system = body["system"]
    return system if isinstance(system, str) else " ".join(b["text"] for b in system)


def test_the_target_roles_agent_answers(task, stub, client):
    stub.add(message("Ints only, as plan.md says.", usage=USAGE))

    context, outcome = ask(task, client)

    assert not outcome.is_error, outcome.content
    assert outcome.content == "The planner answers:\nInts only, as plan.md says."
    (body,) = stub.bodies
    # The analyst's (planner's) system prompt, not the writer's.
    assert role_for("planning").system_prompt in system_text(body)
    assert role_for("implementation").system_prompt not in system_text(body)
    assert "the developer, asks you, the planner" in " ".join(system_text(body).split())
    assert body["max_tokens"] == ANSWER_MAX_TOKENS and "tools" not in body
    prompt = body["messages"][0]["content"]
    prompt = prompt if isinstance(prompt, str) else prompt[0]["text"]
    assert "Should mul accept floats?" in prompt and PLAN in prompt
    # Recorded: the question answered once, by the analyst's agent, and an event.
    question = AgentQuestion.objects.get()
    assert question.answered and question.answer == "Ints only, as plan.md says."
    assert question.answered_by == "agent:analyst"
    event = Event.objects.get(subject=f"question:{question.pk}")
    assert event.actor == "agent:analyst"
    assert event.data["answer"] == question.answer
    assert (event.data["input_tokens"], event.data["output_tokens"]) == (900, 40)
    # Counted for the run.
    assert context.side_usage == Usage(input_tokens=900, output_tokens=40)
    assert context.side_cost_usd > 0 and context.side_calls == 1


def test_a_model_error_leaves_the_question_unanswered(task, stub, client):
    stub.add(error(529, retry_after=3))

    context, outcome = ask(task, client)

    assert outcome.is_error
    assert "the planner could not be asked" in outcome.content
    assert not AgentQuestion.objects.get().answered
    event = Event.objects.get(subject__startswith="question:")
    assert "not answered" in event.reason
    assert context.side_calls == 0


def test_answers_per_run_are_bounded(task, stub, client):
    stub.add(*[message(f"answer {n}") for n in range(MAX_ANSWERS_PER_RUN)])
    context = RoleContext(task=task, client=client)
    tools = {t.name: t for t in domain_tools(context, phase="implementation")}
    outcomes = [
        tools["ask_question"].call({"to": "reviewer", "question": f"q{n}?"})
        for n in range(MAX_ANSWERS_PER_RUN + 1)
    ]
    assert all(not o.is_error for o in outcomes)
    assert outcomes[-1].content.startswith("recorded, not answered")
    assert len(stub.bodies) == MAX_ANSWERS_PER_RUN
    assert AgentQuestion.objects.filter(answered_at__isnull=True).count() == 1


@pytest.fixture
def repository(bare_repo):  # noqa: F811 (the imported fixture)
    return Repository.objects.create(url=f"file://{bare_repo}")


@pytest.mark.django_db(transaction=True)
def test_through_the_phase_runner_the_answer_counts_in_the_runs_usage(
    agent_settings,  # noqa: F811 (the imported fixture)
    stub,
    repository,
):
    spec = intake_and_planning()[1]
    stub.add(
        message(
            tool_use("ask_question", {"to": "planner", "question": "Scope?"}),
            usage={"input_tokens": 100, "output_tokens": 10},
        ),
        message("Only calc.py.", usage={"input_tokens": 700, "output_tokens": 5}),
        message(
            spec.body["content"][0], usage={"input_tokens": 200, "output_tokens": 20}
        ),
    )
    task = make_task(repository, issue_number=3)

    assert advance_task(task.task_id) == "in_progress/planning"

    # The answer went back to the triage agent as its tool result.
    results = [
        block
        for block in stub.bodies[2]["messages"][-1]["content"]
        if block.get("type") == "tool_result"
    ]
    assert "The planner answers:\nOnly calc.py." in str(results[0]["content"])
    assert role_for("planning").system_prompt in system_text(stub.bodies[1])
    run = AgentRun.objects.get(task=task)
    assert (run.input_tokens, run.output_tokens) == (1000, 35)
    assert run.cost_usd > Decimal(0)
    assert AgentQuestion.objects.get().answer == "Only calc.py."
