"""Spec 000 §3: the Projects v2 board, moved through GraphQL with the
project's field and option ids."""

from __future__ import annotations

import json

import pytest

from integrations.github.projects import add_item, issue_node_id, move_item
from tests.claims.factories import make_board_item, make_project
from tests.integrations.github.payloads import GRAPHQL, REPO_API, issue

pytestmark = pytest.mark.django_db


def sent(call) -> dict:
    return json.loads(call.request.body)


def moved(item_id: str) -> dict:
    return {
        "data": {"updateProjectV2ItemFieldValue": {"projectV2Item": {"id": item_id}}}
    }


@pytest.fixture
def project(repository):
    return make_project(
        repository,
        project_id="PVT_kwDOABC123",
        status_field_id="PVTSSF_lADOABC123",
        todo_option_id="f75ad846",
        in_progress_option_id="47fc9ee4",
        done_option_id="98236657",
    )


def test_add_item_puts_the_issue_on_the_board(github, project):
    github.get(f"{REPO_API}/issues/1", json=issue(1))
    github.post(
        GRAPHQL,
        json={"data": {"addProjectV2ItemById": {"item": {"id": "PVTI_lADOABC123zgB"}}}},
    )

    node_id = issue_node_id(project.repository.full_name, 1)
    item_id = add_item(project, node_id)

    assert node_id == "MDU6SXNzdWU0NDQ1MDAwNDE="
    assert item_id == "PVTI_lADOABC123zgB"
    request = sent(github.calls[1])
    assert "addProjectV2ItemById" in request["query"]
    assert request["variables"] == {
        "projectId": "PVT_kwDOABC123",
        "contentId": "MDU6SXNzdWU0NDQ1MDAwNDE=",
    }


@pytest.mark.parametrize(
    ("status", "option"),
    [("todo", "f75ad846"), ("in_progress", "47fc9ee4"), ("done", "98236657")],
)
def test_move_item_sets_the_status_option(github, project, status, option):
    github.post(GRAPHQL, json=moved("PVTI_lADOABC123zgB"))

    assert move_item(project, "PVTI_lADOABC123zgB", status) == "PVTI_lADOABC123zgB"

    request = sent(github.calls[0])
    assert "updateProjectV2ItemFieldValue" in request["query"]
    assert "singleSelectOptionId: $optionId" in request["query"]
    assert request["variables"] == {
        "projectId": "PVT_kwDOABC123",
        "itemId": "PVTI_lADOABC123zgB",
        "fieldId": "PVTSSF_lADOABC123",
        "optionId": option,
    }


def test_the_board_follows_todo_in_progress_done(github, project):
    item = make_board_item(project, issue_number=42, item_id="PVTI_abc123")
    for _ in range(3):
        github.post(GRAPHQL, json=moved("PVTI_abc123"))

    assert move_item(item.project, item.item_id, item.status) == "PVTI_abc123"
    item.perform("claim", by="session_1")
    move_item(item.project, item.item_id, item.status)
    item.perform("close", by="session_1")
    move_item(item.project, item.item_id, item.status)

    options = [sent(call)["variables"]["optionId"] for call in github.calls]
    assert options == ["f75ad846", "47fc9ee4", "98236657"]
