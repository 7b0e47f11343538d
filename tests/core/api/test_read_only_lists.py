"""What every list of the API shares: filters (one 400 naming each bad
parameter), cursor pagination, the detail's 404 (codex.core.api)."""

from __future__ import annotations

import pytest

from codex.events.models import Event
from tests.core.api.conftest import assert_error_shape, results, role_client
from tests.core.api.resources import make_escalation, make_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def team_client(db):
    return role_client("team", "carol")


LISTS = [
    ("/api/agent-instances/", {"status": "started", "type": "coding"}),
    ("/api/agent-runs/", {"status": "succeeded"}),
    ("/api/claims/", {"state": "unclaimed"}),
    ("/api/backlog-runs/", {"state": "running"}),
    ("/api/child-reports/", {"status_type": "SUCCESS", "current": "true"}),
    ("/api/child-analyses/", {}),
    ("/api/repositories/", {"forge": "github"}),
]


@pytest.mark.parametrize(("url", "filters"), LISTS)
def test_read_only_lists_filter_and_paginate(team_client, url, filters):
    make_world()
    everything = results(team_client.get(url))
    filtered = results(team_client.get(url, filters))
    assert len(filtered) <= len(everything)
    if url != "/api/child-analyses/":
        assert filtered, url
        detail = team_client.get(f"{url}{filtered[0]['id']}/")
        assert detail.status_code == 200
        assert detail.json()["id"] == filtered[0]["id"]
    assert_error_shape(team_client.get(f"{url}999999/"), 404, "not_found")


@pytest.mark.parametrize(
    ("url", "param"),
    [
        ("/api/agent-instances/", "status"),
        ("/api/agent-runs/", "status"),
        ("/api/claims/", "state"),
        ("/api/backlog-runs/", "state"),
        ("/api/child-reports/", "status_type"),
        ("/api/child-reports/", "current"),
        ("/api/child-analyses/", "merge_strategy"),
        ("/api/tasks/", "priority"),
    ],
)
def test_bad_filters_are_400(team_client, url, param):
    error = assert_error_shape(team_client.get(url, {param: "bogus"}), 400, "invalid")
    assert param in error["fields"]


def test_repository_filter_and_task_filter(team_client):
    world = make_world()
    instances = results(
        team_client.get(
            "/api/agent-instances/", {"repository": "https://github.com/acme/world"}
        )
    )
    assert [i["id"] for i in instances] == [world.instance_id]
    assert (
        results(
            team_client.get(
                "/api/claims/", {"repository": "https://github.com/acme/none"}
            )
        )
        == []
    )
    reports = results(team_client.get("/api/child-reports/"))
    parent = reports[0]["parent_task"]
    assert results(team_client.get("/api/child-reports/", {"task": parent}))
    assert Event.objects.exists()


def test_page_size_and_bad_cursor(team_client):
    for _ in range(3):
        make_escalation()
    page = team_client.get("/api/escalations/", {"page_size": 2}).json()
    assert len(page["results"]) == 2 and page["next"]
    assert_error_shape(team_client.get("/api/escalations/", {"cursor": "bad"}), 404)


def test_a_detail_ignores_the_lists_filters(team_client):
    escalation = make_escalation()
    url = f"/api/escalations/{escalation.pk}/"
    assert team_client.get(url, {"state": "bogus"}).status_code == 200


@pytest.mark.parametrize(
    ("param", "value"),
    [("status", "100%"), ("status", "%(x)s,%s"), ("repository", "https://x/%s%")],
)
def test_a_percent_sign_in_a_bad_filter_is_a_400(team_client, param, value):
    """django-filter formats messages with %: a client's % must not break it."""
    response = team_client.get("/api/tasks/", {param: value})
    error = assert_error_shape(response, 400, "invalid")
    assert list(error["fields"]) == [param]
