"""The planner and the developer see a map of the repository in their first
message (docs/agents.md#prompt), fenced as its content, the files the
analysis names first; the other roles do not, and 0 tokens turns it off."""

from __future__ import annotations

import pytest

from codex.repositories.models import Repository
from tests.agents_e2e.test_agents_end_to_end import (
    MUL_OK,
    implementation,
    intake_and_planning,
    steps,
)
from tests.factories import make_task

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def repository(bare_repo):
    return Repository.objects.create(url=f"file://{bare_repo}")


def first_message(body) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else content[0]["text"]


def test_the_planner_and_the_developer_see_the_map(agent_settings, stub, repository):
    agent_settings.CODEX_AGENT_REPO_MAP_TOKENS = 500
    stub.add(*intake_and_planning(), *implementation(MUL_OK))
    task = make_task(repository, title="Add multiplication")

    assert steps(task, 3)[-1] == "in_progress/verification"

    product_manager, planner, developer = (
        first_message(stub.bodies[i]) for i in (0, 2, 3)
    )
    assert "A map of the repository" not in product_manager
    for prompt in (planner, developer):
        assert "A map of the repository" in prompt
        assert "calc.py" in prompt and "def add(a, b)" in prompt
        assert 'source="the repository map, made from its code"' in prompt


def test_no_tokens_no_map(agent_settings, stub, repository):
    agent_settings.CODEX_AGENT_REPO_MAP_TOKENS = 0
    stub.add(*intake_and_planning())
    task = make_task(repository, title="Add multiplication")

    steps(task, 2)

    assert "A map of the repository" not in first_message(stub.bodies[2])
