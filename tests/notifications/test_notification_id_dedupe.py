"""Spec 002 §3.5: "Trigger notification | No | Deduplicate via notification_id in
task envelope"."""

from __future__ import annotations

import pytest

from codex.notifications.models import Notification, NotificationQuerySet
from tests.factories import make_task

pytestmark = pytest.mark.django_db


def test_the_same_id_returns_the_same_row():
    task = make_task()
    first, created = Notification.objects.enqueue(
        "n-1", channel="teams", recipient="alpha", subject="one", task=task
    )
    again, created_again = Notification.objects.enqueue(
        "n-1", channel="email", recipient="beta", subject="two"
    )

    assert (created, created_again) == (True, False)
    assert again.pk == first.pk
    assert (again.channel, again.subject, again.task_id) == ("teams", "one", task.pk)
    assert Notification.objects.count() == 1


def test_a_racing_enqueue_is_settled_by_the_unique_constraint(monkeypatch):
    first, _ = Notification.objects.enqueue("n-2", channel="teams", recipient="a")
    # The racer's existence check ran before the winner's insert committed.
    monkeypatch.setattr(NotificationQuerySet, "first", lambda self: None)

    racer, created = Notification.objects.enqueue("n-2", channel="teams", recipient="a")

    assert created is False
    assert racer.pk == first.pk
    assert Notification.objects.count() == 1
