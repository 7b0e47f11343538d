"""Fixtures for the scheduled worker jobs' tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def enqueued(monkeypatch) -> list[tuple[tuple, dict]]:
    """Record every django_q async_task call instead of sending it to a broker."""
    calls: list[tuple[tuple, dict]] = []

    def fake_async_task(func, *args, **kwargs):
        calls.append(((func, *args), kwargs))
        return "fake-id"

    monkeypatch.setattr("django_q.tasks.async_task", fake_async_task)
    return calls
