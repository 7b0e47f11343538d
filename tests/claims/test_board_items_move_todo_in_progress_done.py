"""Spec 000 §3: [Not on board] --add--> [Todo] --claim--> [In Progress]
--close--> [Done]."""

from __future__ import annotations

import pytest
from django.db import IntegrityError
from django_fsm import TransitionNotAllowed

from codex.claims.models import BoardStatus
from codex.events.models import Event, EventKind
from tests.claims.factories import make_board_item, make_project
from tests.factories import make_repository

pytestmark = pytest.mark.django_db


def test_an_item_moves_todo_in_progress_done_with_events():
    project = make_project(make_repository("https://github.com/acme/app"))
    item = make_board_item(project, 42)
    assert item.status == BoardStatus.TODO and item.option_id == "98f5c"

    item.perform("claim", by="session:s1")
    assert item.option_id == "47d3e" and item.status_updated_at is not None
    item.perform("close", by="session:s1")
    item.refresh_from_db()
    assert item.status == BoardStatus.DONE and item.option_id == "f7a2b"

    events = Event.objects.filter(subject="board:acme/app#42").in_order()
    assert [(e.data["transition"], e.source, e.target) for e in events] == [
        ("add", "", "todo"),
        ("claim", "todo", "in_progress"),
        ("close", "in_progress", "done"),
    ]
    assert {e.kind for e in events} == {EventKind.CLAIM}


def test_an_item_in_todo_cannot_jump_to_done():
    item = make_board_item()
    with pytest.raises(TransitionNotAllowed):
        item.perform("close", by="session:s1")


def test_an_issue_is_on_a_board_once():
    project = make_project()
    make_board_item(project, 7, "PVTI_a")
    with pytest.raises(IntegrityError):
        make_board_item(project, 7, "PVTI_b")


def test_one_board_per_repository():
    repository = make_repository()
    make_project(repository)
    with pytest.raises(IntegrityError):
        make_project(repository)
