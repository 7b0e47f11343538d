"""Review → developer → review, end to end with the scripted model: every
comment of the review (file, line, issue, suggestion) reaches the developer's
next cycle, the developer must answer each one, and the next reviewer reads
those answers."""

from __future__ import annotations

import pytest

from codex.repositories.models import Repository
from codex.tasks.jobs import advance_task
from tests.agents_e2e.test_agents_end_to_end import (
    MUL_OK,
    QA_APPROVE,
    REVIEW_APPROVE,
    implementation,
    intake_and_planning,
    steps,
)
from tests.factories import make_task
from tests.model_stub import message, submit, tool_use

pytestmark = pytest.mark.django_db(transaction=True)

REVIEW_WITH_FINDINGS = submit(
    {
        "assessment": "request_changes",
        "summary": "mul needs a docstring.",
        "comments": [
            {
                "severity": "suggestion",
                "file": "test_mul.py",
                "line": 4,
                "issue": "Name the test after the case.",
                "category": "tests",
            },
            {
                "severity": "blocking",
                "file": "calc.py",
                "line": 5,
                "issue": "mul has no docstring",
                "suggestion": "Add a one-line docstring.",
                "category": "documentation",
            },
        ],
        "security": {"vulnerabilities_found": 0, "items": []},
    }
)
MUL_DOCUMENTED = MUL_OK.replace(
    "def mul(a, b):\n", 'def mul(a, b):\n    """The product of a and b."""\n'
)
ANSWERS = [
    {"id": "R002", "status": "fixed", "note": "Added the docstring to mul."},
    {"id": "R001", "status": "not_fixed", "note": "test_mul already names it."},
]


def first_user_text(body):
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else content[0]["text"]


@pytest.fixture
def repository(bare_repo):
    return Repository.objects.create(url=f"file://{bare_repo}")


def test_it_carries_each_review_comment_to_the_developer_and_back(
    agent_settings, stub, repository
):
    agent_settings.CODEX_REVIEW_POST_COMMENTS = False
    stub.add(
        *intake_and_planning(),
        *implementation(MUL_OK),
        QA_APPROVE,
        REVIEW_WITH_FINDINGS,
    )
    task = make_task(repository, title="Add multiplication")
    assert steps(task, 5)[-1] == "in_progress/implementation"

    stub.add(
        message(tool_use("write_file", {"path": "calc.py", "content": MUL_DOCUMENTED})),
        # Without an answer per finding the result is refused...
        submit({"summary": "Fixed.", "commit_message": "Doc", "tasks_completed": 1}),
        submit(
            {
                "summary": "Documented mul.",
                "commit_message": "Document mul",
                "tasks_completed": 1,
                "feedback_responses": ANSWERS,
            }
        ),
        QA_APPROVE,
        REVIEW_APPROVE,
    )
    assert advance_task(task.task_id) == "in_progress/verification"

    developer = first_user_text(stub.bodies[7])
    assert "the reviewer's findings" in developer
    assert "R002 [blocking] calc.py:5: mul has no docstring" in developer
    assert "Suggested fix: Add a one-line docstring." in developer
    assert "R001 [suggestion] test_mul.py:4: Name the test after the case." in developer
    # The progress note does not say the work is over.
    assert "Nothing is left." not in developer
    assert "submit with an answer to every finding" in developer
    refused = stub.bodies[9]["messages"][-1]["content"]
    assert any("feedback_responses" in block.get("content", "") for block in refused), (
        refused
    )

    assert steps(task, 2)[-1] == "in_progress/release"
    reviewer = first_user_text(stub.bodies[-1])
    assert "feedback-responses.md" in reviewer
    assert "mul has no docstring" in reviewer
    assert "Developer: fixed. Added the docstring to mul." in reviewer
    assert "Developer: not_fixed. test_mul already names it." in reviewer
    assert '+    """The product of a and b."""' in reviewer
