"""Idempotency-Key on every POST (codex.core.api.idempotency)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from codex.core.api.idempotency import prune_idempotency_records
from codex.core.api.idempotency_record import IdempotencyRecord
from codex.tasks.models import Task
from tests.core.api.conftest import assert_error_shape, role_client
from tests.core.api.resources import make_escalation
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


def api_posts(resolver=None, prefix=""):
    """Every route under /api/ with the method answering its POST: an APIView's
    `post` or a viewset's action (`create`)."""
    resolver = resolver or get_resolver()
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from api_posts(pattern, route)
        elif isinstance(pattern, URLPattern) and route.startswith("api/"):
            view_class = getattr(pattern.callback, "cls", None)
            actions = getattr(pattern.callback, "actions", None) or {}
            handler = actions.get("post") or "post"
            if view_class is not None and hasattr(view_class, handler):
                yield route, getattr(view_class, handler)


def test_every_post_view_is_idempotent():
    posts = [(r, h) for r, h in api_posts() if not r.startswith("api/webhooks/")]
    assert len(posts) >= 10
    for route, handler in posts:
        assert getattr(handler, "idempotent", False), route


@pytest.fixture
def ops(db):
    return role_client("operator", "ops")


def post(client, url, body, key):
    return client.post(url, body, format="json", headers={"Idempotency-Key": key})


def test_an_action_is_replayed_not_repeated(ops):
    task = put_in_state(make_task(), status="in_progress")
    url = f"/api/tasks/{task.task_id}/pause/"
    first = post(ops, url, {"reason": "lunch"}, "pause-1")
    assert first.status_code == 200, first.content
    task.perform("resume", by="user:x")  # the state moved on meanwhile
    second = post(ops, url, {"reason": "lunch"}, "pause-1")
    assert second.status_code == 200
    assert second["Idempotent-Replayed"] == "true"
    assert second.json() == first.json()
    task.refresh_from_db()
    assert task.status == "in_progress"  # not paused a second time
    assert task.events.filter(target="paused").count() == 1


def test_a_retry_of_a_failed_task_replays_its_201_as_200(ops):
    old = put_in_state(make_task(), status="failed")
    url = f"/api/tasks/{old.task_id}/retry/"
    first = post(ops, url, {}, "retry-1")
    assert first.status_code == 201
    second = post(ops, url, {}, "retry-1")
    assert (second.status_code, second["Idempotent-Replayed"]) == (200, "true")
    assert second["Location"] == first["Location"]
    assert second.json()["task_id"] == first.json()["task_id"]


def test_resolving_with_the_same_key_replays_instead_of_409(db):
    team = role_client("team", "carol")
    escalation = make_escalation()
    url = f"/api/escalations/{escalation.pk}/resolve/"
    body = {"decision": "cancel", "resolution": "not needed"}
    first = post(team, url, body, "resolve-1")
    assert first.status_code == 200
    second = post(team, url, body, "resolve-1")
    assert second.status_code == 200 and second["Idempotent-Replayed"] == "true"
    # Without the key, the second resolution is refused as it should be.
    assert_error_shape(team.post(url, body, format="json"), 409, "already_resolved")


def test_same_key_other_request_is_422(ops):
    task = put_in_state(make_task(), status="in_progress")
    assert post(ops, f"/api/tasks/{task.task_id}/pause/", {}, "k").status_code == 200
    other_path = post(ops, f"/api/tasks/{task.task_id}/cancel/", {}, "k")
    error = assert_error_shape(other_path, 422, "idempotency_key_reused")
    assert "pause" in error["message"]
    other_body = post(ops, f"/api/tasks/{task.task_id}/pause/", {"reason": "x"}, "k")
    assert_error_shape(other_body, 422, "idempotency_key_reused")
    task.refresh_from_db()
    assert task.status == "paused"


def test_errors_are_not_stored_so_the_key_can_be_used_again(ops):
    task = put_in_state(make_task(), status="paused")
    url = f"/api/tasks/{task.task_id}/pause/"
    assert_error_shape(post(ops, url, {}, "k2"), 409)
    assert not IdempotencyRecord.objects.exists()
    put_in_state(task, status="in_progress")
    assert post(ops, url, {}, "k2").status_code == 200
    assert IdempotencyRecord.objects.get().response_status == 200


def test_keys_expire_after_24_hours_and_are_pruned(ops, settings):
    repository_body = {"url": "https://github.com/acme/one"}
    assert post(ops, "/api/repositories/", repository_body, "r").status_code == 201
    record = IdempotencyRecord.objects.get()
    IdempotencyRecord.objects.filter(pk=record.pk).update(
        created_at=timezone.now() - timedelta(hours=25)
    )
    # Expired: the same key acts again (here: a different repository).
    again = post(ops, "/api/repositories/", {"url": "https://github.com/acme/two"}, "r")
    assert again.status_code == 201
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=25))
    fresh = post(ops, "/api/repositories/", {"url": "https://github.com/acme/3"}, "s")
    assert fresh.status_code == 201
    assert prune_idempotency_records() == 1
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["s"]
    settings.CODEX_IDEMPOTENCY_TTL_HOURS = 0
    assert prune_idempotency_records() == 1


def test_task_creation_stores_one_record_per_user_and_key(api_client):
    body = {"repository": "https://github.com/acme/shop", "title": "A"}
    first = post(api_client, "/api/tasks/", body, "create-1")
    assert first.status_code == 201
    assert first["Location"] == f"/api/tasks/{first.json()['task_id']}/"
    assert post(api_client, "/api/tasks/", body, "create-1").status_code == 200
    assert Task.objects.count() == 1
    record = IdempotencyRecord.objects.get()
    assert (record.key, record.method, record.path) == (
        "create-1",
        "POST",
        "/api/tasks/",
    )
    assert record.response_body["task_id"] == first.json()["task_id"]
