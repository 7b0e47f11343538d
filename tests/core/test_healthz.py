"""/healthz: 200 when the database answers, 503 when it does not."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connections


@pytest.mark.django_db
def test_healthz_ok(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"status": "ok", "database": "ok"}


@pytest.mark.django_db
def test_healthz_needs_no_login_and_sets_no_cookie(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert not response.cookies


@pytest.mark.django_db
def test_healthz_is_503_when_the_database_fails(client, monkeypatch):
    def broken_cursor(*args, **kwargs):
        raise OperationalError("connection refused")

    with monkeypatch.context() as patch:
        patch.setattr(type(connections["default"]), "cursor", broken_cursor)
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "database": "OperationalError",
    }


@pytest.mark.django_db
def test_healthz_answers_head(client):
    assert client.head("/healthz").status_code == 200


@pytest.mark.django_db
def test_healthz_refuses_post(client):
    assert client.post("/healthz").status_code == 405
