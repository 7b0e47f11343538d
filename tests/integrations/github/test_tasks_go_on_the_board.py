"""Spec 000 §3 for Codex's own work: "[Not on board] --add--> [Todo] --claim-->
[In Progress] --close--> [Done]". A task made from a GitHub issue puts the
issue on the repository's Projects v2 board (GraphQL addProjectV2ItemById, then
its Status set to Todo) and the item follows the task; every change is sent to
GitHub once."""

from __future__ import annotations

import json

import pytest

from codex.claims.jobs import follow_claims_on_board
from codex.claims.models import BoardItem
from tests.claims.factories import make_project
from tests.factories import make_task, put_in_state
from tests.integrations.github.payloads import GRAPHQL, REPO_API

# perform_once commits its record before acting: no test-wide transaction.
pytestmark = pytest.mark.django_db(transaction=True)


def added(item_id: str) -> dict:
    return {"data": {"addProjectV2ItemById": {"item": {"id": item_id}}}}


def moved(item_id: str) -> dict:
    return {
        "data": {"updateProjectV2ItemFieldValue": {"projectV2Item": {"id": item_id}}}
    }


def graphql_calls(github) -> list[dict]:
    return [
        json.loads(call.request.body)
        for call in github.calls
        if call.request.url == GRAPHQL
    ]


def test_a_task_from_an_issue_goes_on_the_board_and_moves_to_done(github, repository):
    project = make_project(repository)
    task = make_task(repository, issue_number=7)
    github.get(f"{REPO_API}/issues/7", json={"number": 7, "node_id": "I_kwDO7"})
    github.post(GRAPHQL, json=added("PVTI_7"))
    github.post(GRAPHQL, json=moved("PVTI_7"))

    counts = follow_claims_on_board()

    assert counts == {"added": 1, "in_progress": 0, "done": 0, "pushed": 1}
    item = BoardItem.objects.get(project=project, issue_number=7)
    assert (item.item_id, item.status) == ("PVTI_7", "todo")
    add, todo = graphql_calls(github)
    assert add["variables"] == {"projectId": project.project_id, "contentId": "I_kwDO7"}
    assert todo["variables"]["optionId"] == project.todo_option_id

    # Nothing changed: nothing is added or pushed again.
    assert follow_claims_on_board() == {
        "added": 0,
        "in_progress": 0,
        "done": 0,
        "pushed": 0,
    }

    put_in_state(task, status="in_progress")
    github.post(GRAPHQL, json=moved("PVTI_7"))
    assert follow_claims_on_board()["in_progress"] == 1
    assert graphql_calls(github)[-1]["variables"]["optionId"] == "47d3e"

    put_in_state(task, status="completed")
    github.post(GRAPHQL, json=moved("PVTI_7"))
    assert follow_claims_on_board()["done"] == 1
    item.refresh_from_db()
    assert item.status == "done"
    assert graphql_calls(github)[-1]["variables"]["optionId"] == "f7a2b"
    assert len(graphql_calls(github)) == 4


def test_a_task_that_completed_before_the_board_saw_it_goes_to_done(github, repository):
    make_project(repository)
    put_in_state(make_task(repository, issue_number=8), status="completed")
    github.get(f"{REPO_API}/issues/8", json={"number": 8, "node_id": "I_kwDO8"})
    github.post(GRAPHQL, json=added("PVTI_8"))
    github.post(GRAPHQL, json=moved("PVTI_8"))
    github.post(GRAPHQL, json=moved("PVTI_8"))

    counts = follow_claims_on_board()

    assert (counts["added"], counts["done"]) == (1, 1)
    assert BoardItem.objects.get(issue_number=8).status == "done"


def test_tasks_without_an_issue_or_a_board_stay_off_it(github, repository):
    make_task(repository)  # from the web form: no issue
    make_task(issue_number=9)  # another repository, which has no board
    make_project(repository)

    assert follow_claims_on_board()["added"] == 0
    assert not BoardItem.objects.exists()
