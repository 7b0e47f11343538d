"""The outbox in the console: constant queries, and an operator's retry."""

from __future__ import annotations

import pytest
from django.urls import reverse

from codex.events.models import Event
from codex.notifications.models import Notification
from tests.factories import make_task
from tests.notifications.factories import Sender, enqueue

pytestmark = pytest.mark.django_db

LIST_URL = reverse("admin:notifications_notification_changelist")


def test_the_change_list_runs_a_constant_number_of_queries(
    console, django_assert_max_num_queries
):
    for _ in range(3):
        enqueue(task=make_task())
    with django_assert_max_num_queries(20) as few:
        assert console.get(LIST_URL).status_code == 200
    for _ in range(27):
        enqueue(task=make_task())
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = console.get(LIST_URL)
    assert response.content.decode().count("FEAT-20260119-abc123:escalated") >= 30


def test_an_operator_retries_a_failed_notification(console):
    notification = enqueue()
    notification.deliver(Sender(PermissionError("bad webhook url")))
    Notification.objects.filter(pk=notification.pk).update(status="failed")
    url = reverse("admin:notifications_notification_change", args=[notification.pk])

    response = console.post(url, {"_fsm_transition_to": "retry"})

    assert response.status_code == 302
    notification.refresh_from_db()
    assert notification.status == "pending"
    event = Event.objects.filter(target="pending", source="failed").get()
    assert event.actor.startswith("user:")
