"""Checks that judge the change: the repository's commands run on the base
commit once (cached), a test failing there already does not send the change
back, every role's prompt names the commands, QA reads the diff and the plan,
the reviewer the whole diff and QA's results."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from agents import baseline
from agents.demo import CALC, TEST_CALC, create_bare_repository
from codex.repositories.models import Repository
from codex.tasks.models import VerificationReport
from tests.agents_e2e.test_agents_end_to_end import (
    MUL_OK,
    QA_APPROVE,
    REVIEW_APPROVE,
    implementation,
    intake_and_planning,
    steps,
)
from tests.factories import make_task
from tests.model_stub import message, tool_use

pytestmark = pytest.mark.django_db(transaction=True)

BROKEN_ALREADY = "def test_known_bug():\n    assert 1 + 1 == 3\n"


def first_text(body):
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else content[0]["text"]


@pytest.fixture
def repository(tmp_path):
    bare = create_bare_repository(
        tmp_path / "remote",
        seed={
            "calc.py": CALC,
            "test_calc.py": TEST_CALC,
            "test_known_bug.py": BROKEN_ALREADY,
        },
    )
    cache.clear()
    return Repository.objects.create(url=f"file://{bare}", check_timeout_seconds=300)


def test_a_test_failing_on_the_base_does_not_send_the_change_back(
    agent_settings, stub, repository, monkeypatch
):
    stub.add(
        *intake_and_planning(),
        *implementation(MUL_OK),
        QA_APPROVE,
        message(tool_use("read_diff", {"path": "calc.py"})),
        REVIEW_APPROVE,
    )
    task = make_task(repository, title="Add multiplication")

    results = steps(task, 5)

    assert results[-1] == "in_progress/release", results
    report = VerificationReport.objects.get(task=task)
    assert report.recommendation == "approve"
    assert report.tests_failed == 1
    (failure,) = report.failures
    assert failure["name"].endswith("test_known_bug") and failure["pre_existing"]
    assert report.feedback["pre_existing_failures"] == [failure["name"]]

    # Every role's prompt names the repository's commands.
    for body in (stub.bodies[0], stub.bodies[2], stub.bodies[3], stub.bodies[5]):
        assert "The repository's check commands" in first_text(body)
        assert "- test: `python" in first_text(body)
    qa_prompt = first_text(stub.bodies[5])
    assert "on the base commit" in qa_prompt and "test_known_bug" in qa_prompt
    assert "+def mul(a, b):" in qa_prompt
    assert "plan.md, written from the request" in qa_prompt
    reviewer = first_text(stub.bodies[6])
    assert "QA's results (verification cycle 1): approve" in reviewer
    assert "Failing on the base branch already" in reviewer
    assert "read_diff" in {tool["name"] for tool in stub.bodies[6]["tools"]}
    page = stub.bodies[7]["messages"][-1]["content"][0]["content"]
    assert "+def mul(a, b):" in page

    # The base commit's outcome is cached: no second run for it.
    def no_run(*args):
        raise AssertionError("the base was checked again")

    monkeypatch.setattr(baseline, "_run_on", no_run)
    from agents.phase_runner import worktree_path

    again = baseline.for_task(worktree_path(task), repository)
    assert again["checks"]["test"]["status"] == "failed"
