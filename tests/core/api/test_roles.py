"""Every endpoint × every role: 401 without credentials, 403 for a role that may
not, anything but 401/403 for one that may (codex.accounts.permissions)."""

from __future__ import annotations

import pytest

from codex.accounts.permissions import roles_of
from tests.core.api.conftest import assert_error_shape, role_client
from tests.core.api.resources import make_world
from tests.factories import make_user

pytestmark = pytest.mark.django_db

ALL = {"operator", "team", "integrator"}
STAFF = {"operator", "team"}
OPS = {"operator"}


def endpoints(w) -> list[tuple[str, str, set[str]]]:
    t = w.task.task_id
    return [
        ("get", "/api/tasks/", ALL),
        ("post", "/api/tasks/", ALL),
        ("get", f"/api/tasks/{t}/", ALL),
        ("get", f"/api/tasks/{t}/envelope/", ALL),
        ("get", f"/api/tasks/{t}/issue-state/", ALL),
        ("get", f"/api/tasks/{t}/events/", ALL),
        ("get", f"/api/tasks/{t}/artifacts/", ALL),
        ("get", f"/api/tasks/{t}/reports/", ALL),
        ("post", f"/api/tasks/{t}/pause/", OPS),
        ("post", f"/api/tasks/{t}/resume/", OPS),
        ("post", f"/api/tasks/{t}/cancel/", OPS),
        ("post", f"/api/tasks/{t}/retry/", OPS),
        ("get", "/api/escalations/", STAFF),
        ("get", f"/api/escalations/{w.escalation.pk}/", STAFF),
        ("post", f"/api/escalations/{w.escalation.pk}/resolve/", STAFF),
        ("get", "/api/repositories/", STAFF),
        ("post", "/api/repositories/", OPS),
        ("get", f"/api/repositories/{w.repository_id}/", STAFF),
        ("get", "/api/agent-instances/", STAFF),
        ("get", f"/api/agent-instances/{w.instance_id}/", STAFF),
        ("get", "/api/agent-runs/", STAFF),
        ("get", f"/api/agent-runs/{w.run_id}/", STAFF),
        ("get", "/api/claims/", STAFF),
        ("get", f"/api/claims/{w.claim_id}/", STAFF),
        ("get", "/api/backlog-runs/", STAFF),
        ("get", f"/api/backlog-runs/{w.backlog_run_id}/", STAFF),
        ("get", "/api/child-reports/", STAFF),
        ("get", f"/api/child-reports/{w.child_report_id}/", STAFF),
        ("get", "/api/child-analyses/", STAFF),
    ]


def test_every_endpoint_by_every_role():
    world = make_world()
    clients = {role: role_client(role) for role in ALL}
    anonymous = role_client(None)
    checked = 0
    for method, url, allowed in endpoints(world):
        response = getattr(anonymous, method)(url, {}, format="json")
        assert_error_shape(response, 401, "not_authenticated")
        for role, client in clients.items():
            response = getattr(client, method)(url, {}, format="json")
            if role in allowed:
                assert response.status_code not in (401, 403), (role, method, url)
            else:
                error = assert_error_shape(response, 403, "permission_denied")
                assert error["fields"] == {}
            checked += 1
    assert checked == 3 * len(endpoints(world))


def test_a_user_without_a_group_is_an_integrator():
    assert roles_of(make_user()) == {"integrator"}


def test_staff_is_an_operator():
    assert roles_of(make_user(is_staff=True)) == {"operator"}


def test_anonymous_and_inactive_have_no_role():
    assert roles_of(None) == frozenset()
    assert roles_of(make_user(is_active=False)) == frozenset()


def test_team_members_resolve_escalations():
    world = make_world()
    response = role_client("team").post(
        f"/api/escalations/{world.escalation.pk}/resolve/",
        {"decision": "resume", "answers": ["GitHub only"]},
        format="json",
    )
    assert response.status_code == 200, response.content
