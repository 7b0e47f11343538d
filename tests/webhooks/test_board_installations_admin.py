"""Board items, installations, the admin, and the job's own guarantees."""

from __future__ import annotations

import pytest

from codex.claims.models.board import BoardItem, BoardStatus
from codex.events.models import Event, EventKind
from codex.github.models import GitHubInstallation, GitHubProject
from codex.webhooks.jobs import process_delivery, prune_deliveries
from codex.webhooks.models import Outcome, WebhookDelivery
from tests.webhooks.conftest import load, process_all

pytestmark = pytest.mark.django_db


def last() -> WebhookDelivery:
    return WebhookDelivery.objects.order_by("-pk").first()


@pytest.fixture
def board_item(hello_world):
    project = GitHubProject.objects.create(
        repository=hello_world,
        project_id="PVT_kwDOAWcTxs07Gw",
        project_number=1,
        status_field_id="PVTF_lADOAWcTxs07G84AAali",
        todo_option_id="opt-todo",
        in_progress_option_id="opt-progress",
        done_option_id="opt-done",
    )
    return BoardItem.objects.add(project, 1, "PVTI_lADOAWcTxs07G84AVqWu", by="test")


def edited(to) -> dict:
    payload = load("projects_v2_item", "edited.payload.json")
    payload["changes"]["field_value"]["to"] = to
    return payload


def test_a_status_move_on_github_moves_the_board_item(deliver, board_item):
    deliver("projects_v2_item", edited({"id": "opt-progress", "name": "In Progress"}))
    process_all()
    board_item.refresh_from_db()
    assert board_item.status == BoardStatus.IN_PROGRESS
    assert Event.objects.filter(
        kind=EventKind.WEBHOOK, subject="board-item:PVTI_lADOAWcTxs07G84AVqWu"
    ).exists()


def test_a_move_the_board_cannot_make_is_only_recorded(deliver, board_item):
    deliver("projects_v2_item", edited({"id": "opt-done", "name": "Done"}))
    process_all()
    board_item.refresh_from_db()
    assert board_item.status == BoardStatus.TODO
    assert last().outcome == Outcome.PROCESSED


def test_an_unknown_board_item_is_recorded(deliver, db):
    deliver("projects_v2_item", load("projects_v2_item", "archived.payload.json"))
    process_all()
    assert last().outcome == Outcome.PROCESSED
    assert Event.objects.filter(kind=EventKind.WEBHOOK).count() == 1


def test_installations_are_kept_with_their_repositories(deliver, db):
    deliver("installation", load("installation", "created.payload.json"))
    deliver(
        "installation_repositories",
        load("installation_repositories", "added.payload.json"),
    )
    deliver("installation", load("installation", "suspend.payload.json"))
    process_all()
    created = GitHubInstallation.objects.get(installation_id=957387)
    assert created.account_login == "Codertocat"
    assert "Codertocat/Space" in created.repositories
    suspended = GitHubInstallation.objects.get(installation_id=16598467)
    assert suspended.suspended is True
    assert Event.objects.filter(subject="installation:957387").count() == 2


def test_a_processed_delivery_is_not_processed_again(deliver, hello_world):
    deliver("installation", load("installation", "created.payload.json"))
    delivery = last()
    assert process_delivery(delivery.pk) == Outcome.PROCESSED
    assert process_delivery(delivery.pk).startswith("skipped")
    assert Event.objects.filter(kind=EventKind.WEBHOOK).count() == 1


def test_a_handler_error_is_stored_not_raised(deliver, hello_world, monkeypatch):
    def explode(context):
        raise ValueError("boom")

    monkeypatch.setattr("codex.webhooks.handlers.installations.handle", explode)
    deliver("installation", load("installation", "created.payload.json"))
    assert process_delivery(last().pk) == Outcome.FAILED
    delivery = last()
    assert delivery.error == "ValueError: boom"
    assert delivery.processed_at is not None


def test_old_processed_deliveries_are_pruned(deliver, db):
    from datetime import timedelta

    from django.utils import timezone

    deliver("ping", load("ping", "payload.json"))
    WebhookDelivery.objects.update(received_at=timezone.now() - timedelta(days=40))
    deliver("ping", load("ping", "with-app_id.payload.json"))
    assert prune_deliveries(30) == 1
    assert WebhookDelivery.objects.count() == 1


def test_admin_lists_searches_and_shows_deliveries(console, deliver, hello_world):
    deliver("issues", load("issues", "labeled.payload.json"), delivery="find-me")
    process_all()
    url = "/admin/webhooks/webhookdelivery/"
    assert console.get(url).status_code == 200
    page = console.get(url, {"q": "find-me"})
    assert b"find-me" in page.content
    assert console.get(url, {"outcome__exact": "ignored"}).status_code == 200
    detail = console.get(f"{url}{last().pk}/change/")
    assert detail.status_code == 200
    assert b"Spelling error" in detail.content
    assert console.get("/admin/github/githubinstallation/").status_code == 200


def test_admin_reprocess_action_queues_the_delivery_again(
    console, deliver, hello_world, enqueued, django_capture_on_commit_callbacks
):
    deliver("issues", load("issues", "labeled.payload.json"))
    process_all()
    delivery = last()
    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        response = console.post(
            "/admin/webhooks/webhookdelivery/",
            {"action": "reprocess_deliveries", "_selected_action": [delivery.pk]},
        )
    assert response.status_code == 302
    delivery.refresh_from_db()
    assert delivery.processed_at is None and delivery.outcome == Outcome.PENDING
    assert enqueued == [("codex.webhooks.jobs.process_delivery", delivery.pk)]
