"""Every URL pattern of the project × anonymous, team, integrator, operator.

The expectations come from the tables below, keyed by the URL pattern as
django.urls.get_resolver() spells it: a new URL without an entry fails
`test_every_url_pattern_has_an_entry`, so nobody adds a view without saying who
may use it. The rules (codex.accounts.permissions and issue 7):

- /api/*: 401 without credentials, 403 for a role the view's permission class
  does not list, anything else for one it does (the OpenAPI schema and its
  Swagger UI are public by design: codex/core/api/docs.py);
- every method of every URL: a method the tables do not list is refused
  (401 without credentials, 403 or 405 with them; the login redirect, 403 or
  405 on the pages), never served;
- team pages: the login redirect for anonymous browsers; the escalation inbox
  and its answer form for the team and operators (403 for integrators, as in
  the API), the task buttons for operators, every other page for any
  signed-in role (an integrator's task pages only for its own tasks: 404
  otherwise, tests/tasks/api/test_it_shows_an_integrator_only_its_own_tasks.py);
- the admin: operators (staff) only, everyone else the admin login redirect;
- the GitHub webhook: the signature only; no session or role grants anything;
- /healthz and Django's sign-in pages: open; /metrics and /healthz/workers:
  operators or the metrics token (401 without credentials, 403 for others).
"""

from __future__ import annotations

import itertools
import json

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from codex.webhooks.signature import sign
from tests.core.api.resources import make_world
from tests.factories import make_token

pytestmark = pytest.mark.django_db

ALL = frozenset({"operator", "team", "integrator"})
STAFF = frozenset({"operator", "team"})
OPS = frozenset({"operator"})
NOBODY: frozenset[str] = frozenset()

# -- the tables -------------------------------------------------------------

# API pattern → {method: roles allowed}
API = {
    "api/tasks/": {"get": ALL, "post": ALL},
    "api/tasks/<str:task_id>/": {"get": ALL},
    "api/tasks/<str:task_id>/envelope/": {"get": ALL},
    "api/tasks/<str:task_id>/issue-state/": {"get": ALL},
    "api/tasks/<str:task_id>/events/": {"get": ALL},
    "api/tasks/<str:task_id>/artifacts/": {"get": ALL},
    "api/tasks/<str:task_id>/reports/": {"get": ALL},
    (
        "api/^tasks/(?P<task_id>[^/]+)/reports/(?P<kind>verification|review)/"
        "report-(?P<cycle>[1-9][0-9]{0,2})\\.yml$"
    ): {"get": ALL},
    "api/tasks/<str:task_id>/pause/": {"post": OPS},
    "api/tasks/<str:task_id>/resume/": {"post": OPS},
    "api/tasks/<str:task_id>/cancel/": {"post": OPS},
    "api/tasks/<str:task_id>/retry/": {"post": OPS},
    # Gates and steering (docs/gates.md): people with write access.
    "api/tasks/<str:task_id>/approve/": {"post": STAFF},
    "api/tasks/<str:task_id>/request-changes/": {"post": STAFF},
    "api/tasks/<str:task_id>/steer/": {"post": STAFF},
    "api/escalations/": {"get": STAFF},
    "api/escalations/<int:pk>/": {"get": STAFF},
    "api/escalations/<int:pk>/resolve/": {"post": STAFF},
    "api/repositories/": {"get": STAFF, "post": OPS},
    "api/repositories/<int:pk>/": {"get": STAFF},
    "api/agent-instances/": {"get": STAFF, "post": NOBODY},
    "api/agent-instances/<int:pk>/": {"get": STAFF},
    "api/agent-runs/": {"get": STAFF, "post": NOBODY},
    "api/agent-runs/<int:pk>/": {"get": STAFF},
    "api/claims/": {"get": STAFF, "post": NOBODY},
    "api/claims/<int:pk>/": {"get": STAFF},
    "api/backlog-runs/": {"get": STAFF},
    "api/backlog-runs/<int:pk>/": {"get": STAFF},
    "api/child-reports/": {"get": STAFF},
    "api/child-reports/<int:pk>/": {"get": STAFF},
    "api/child-analyses/": {"get": STAFF},
    "api/child-analyses/<int:pk>/": {"get": STAFF},
}
PUBLIC_API = {"api/schema/", "api/docs/"}
OPEN = {"healthz"}
# Operators (staff) or the metrics token: docs/monitoring.md#access.
MONITORING = {"metrics", "healthz/workers"}
WEBHOOKS = {"api/webhooks/github/"}
# Team pages (login required): pattern → {method: roles allowed}.
TASK_ACTION = "^tasks/(?P<task_id>[^/]+)/(?P<action>retry|pause|resume|cancel)/$"
PAGES = {
    # A redirect to the dashboard, whatever the method (Django's RedirectView).
    "": dict.fromkeys(("get", "post", "put", "patch", "delete"), ALL),
    "dashboard/": {"get": ALL},
    "tasks/new/": {"get": ALL, "post": ALL},
    "tasks/<str:task_id>/": {"get": ALL},
    "tasks/<str:task_id>/fragment/": {"get": ALL},
    TASK_ACTION: {"post": OPS},
    "tasks/<str:task_id>/gate/": {"post": STAFF},
    "tasks/<str:task_id>/steer/": {"post": STAFF},
    "inbox/": {"get": STAFF},
    "inbox/<int:pk>/resolve/": {"post": STAFF},
}
# Every method a client can send; what a table does not list must be refused.
METHODS = ("get", "post", "put", "patch", "delete")
# Django's sign-in pages: open, except changing one's password (login).
AUTH_OPEN = {
    "accounts/login/",
    "accounts/logout/",
    "accounts/password_reset/",
    "accounts/password_reset/done/",
    "accounts/reset/<uidb64>/<token>/",
    "accounts/reset/done/",
}
AUTH_LOGIN = {"accounts/password_change/", "accounts/password_change/done/"}
# The admin site's own URLs; admin/login/ and admin/logout/ are open.
ADMIN_SITE = {
    "admin/",
    "admin/password_change/",
    "admin/password_change/done/",
    "admin/autocomplete/",
    "admin/jsi18n/",
    "admin/r/<path:content_type_id>/<path:object_id>/",
    "admin/^(?P<app_label>{apps})/$",
    "admin/(?P<url>.*)$",
}
ADMIN_OPEN = {"admin/login/", "admin/logout/"}
# Every model in the console; True where django-fsm adds a transition URL.
ADMIN_MODELS = {
    "auth/group": False,
    "auth/user": False,
    "django_q/schedule": False,
    "django_q/success": False,
    "django_q/failure": False,
    "django_q/ormq": False,
    # django-axes: sign-in attempts (an operator deletes one to unlock it).
    "axes/accessattempt": False,
    "axes/accesslog": False,
    "axes/accessfailurelog": False,
    "accounts/apitoken": False,
    "repositories/repository": False,
    "repositories/localpullrequest": False,
    "repositories/localissue": False,
    "events/event": False,
    "tasks/task": True,
    "tasks/escalation": False,
    "tasks/artifact": False,
    "tasks/verificationreport": False,
    "tasks/reviewreport": False,
    "tasks/triage": False,
    "tasks/analysis": False,
    "tasks/buildresult": False,
    "tasks/agentquestion": False,
    "tasks/learning": False,
    "claims/issueclaim": True,
    "claims/backlogrun": True,
    "claims/boarditem": True,
    "fleet/agentinstance": True,
    "fleet/instancerelationship": False,
    "fleet/agentrun": True,
    "children/fanout": False,
    "children/childreport": False,
    "children/completionanalysis": False,
    "configuration/setting": False,
    "configuration/activecredential": False,
    "github/githubissue": False,
    "github/githubtoken": False,
    "github/githubproject": False,
    "github/githubinstallation": False,
    "notifications/notification": True,
    "webhooks/webhookdelivery": False,
}
ADMIN_OBJECT_SUFFIXES = ("history/", "delete/", "change/", "")


def _admin_model_patterns(label: str, transitions: bool) -> set[str]:
    base = f"admin/{label}/"
    patterns = {base, f"{base}add/"}
    patterns |= {f"{base}<path:object_id>/{s}" for s in ADMIN_OBJECT_SUFFIXES}
    if transitions:
        patterns.add(f"{base}<path:object_id>/transition/<str:transition_name>/")
    if label == "auth/user":
        patterns.add("admin/auth/user/<id>/password/")
    return patterns


def all_patterns() -> list[str]:
    """Every URL pattern of the project, as one string each."""

    def walk(resolver, prefix=""):
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                yield from walk(entry, prefix + str(entry.pattern))
            else:
                assert isinstance(entry, URLPattern)
                yield prefix + str(entry.pattern)

    return sorted(set(walk(get_resolver())))


def _registered_labels() -> set[str]:
    return {f"{m._meta.app_label}/{m._meta.model_name}" for m in admin.site._registry}


def admin_patterns() -> dict[str, str]:
    """Admin pattern → kind ("site", "open", "model")."""
    # In the order the admin registered them (an app may register another
    # app's model: the claims app shows the GitHub Projects boards).
    labels = {label.split("/")[0] for label in ADMIN_MODELS}
    apps = "|".join(
        dict.fromkeys(
            m._meta.app_label
            for m in admin.site._registry
            if m._meta.app_label in labels
        )
    )
    table = {p.format(apps=apps) if "{apps}" in p else p: "site" for p in ADMIN_SITE}
    table.update(dict.fromkeys(ADMIN_OPEN, "open"))
    for label, transitions in ADMIN_MODELS.items():
        for pattern in _admin_model_patterns(label, bool(transitions)):
            table[pattern] = "model"
    return table


def expected_patterns() -> set[str]:
    return (
        set(API)
        | PUBLIC_API
        | OPEN
        | MONITORING
        | WEBHOOKS
        | set(PAGES)
        | AUTH_OPEN
        | AUTH_LOGIN
        | set(admin_patterns())
    )


def test_every_url_pattern_has_an_entry():
    patterns = set(all_patterns())
    missing = patterns - expected_patterns()
    assert not missing, f"URL patterns without an authorization entry: {missing}"
    stale = expected_patterns() - patterns
    assert not stale, f"entries for URL patterns that no longer exist: {stale}"
    assert set(ADMIN_MODELS) == _registered_labels()


# -- turning patterns into requests -------------------------------------------


def concrete(pattern: str, world, user_pk: int) -> str:
    """A URL for `pattern` with real objects where the table needs them."""
    analysis_pk = 999_999  # none exists: allowed roles get 404, not 401/403
    special = {
        "admin/^(?P<app_label>": "/admin/tasks/",
        "admin/(?P<url>.*)$": "/admin/no-such-page/",
        "api/escalations/<int:pk>/": f"/api/escalations/{world.escalation.pk}/",
        "api/escalations/<int:pk>/resolve/": (
            f"/api/escalations/{world.escalation.pk}/resolve/"
        ),
        "api/repositories/<int:pk>/": f"/api/repositories/{world.repository_id}/",
        "api/agent-instances/<int:pk>/": f"/api/agent-instances/{world.instance_id}/",
        "api/agent-runs/<int:pk>/": f"/api/agent-runs/{world.run_id}/",
        "api/claims/<int:pk>/": f"/api/claims/{world.claim_id}/",
        "api/backlog-runs/<int:pk>/": f"/api/backlog-runs/{world.backlog_run_id}/",
        "api/child-reports/<int:pk>/": (f"/api/child-reports/{world.child_report_id}/"),
        "api/child-analyses/<int:pk>/": f"/api/child-analyses/{analysis_pk}/",
        # No report exists: allowed roles get 404, not 401/403.
        "api/^tasks/": f"/api/tasks/{world.task.task_id}/reports/review/report-1.yml",
        "inbox/<int:pk>/resolve/": f"/inbox/{world.escalation.pk}/resolve/",
        TASK_ACTION: f"/tasks/{world.task.task_id}/cancel/",
    }
    for prefix, url in special.items():
        if pattern == prefix or pattern.startswith(prefix) and "^" in prefix:
            return url
    url = "/" + pattern
    for placeholder, value in {
        "<str:task_id>": world.task.task_id,
        "<path:content_type_id>": "1",
        "<path:object_id>": "1",
        "<str:transition_name>": "nothing",
        "<id>": str(user_pk),
        "<uidb64>": "MQ",
        "<token>": "set-password",
    }.items():
        url = url.replace(placeholder, value)
    assert "<" not in url, url
    return url


def _is_login_redirect(response, login: str) -> bool:
    return response.status_code == 302 and response["Location"].startswith(login)


def _console_allows(pattern: str, operator) -> bool:
    """Whether the ModelAdmin behind `pattern` lets a superuser do its action."""
    from django.test import RequestFactory

    label = "/".join(pattern.split("/")[1:3])
    app_label, model_name = label.split("/")
    model_admin = next(
        ma
        for model, ma in admin.site._registry.items()
        if (model._meta.app_label, model._meta.model_name) == (app_label, model_name)
    )
    request = RequestFactory().get("/admin/")
    request.user = operator
    if pattern.endswith("/add/"):
        return model_admin.has_add_permission(request)
    if pattern.endswith("/delete/"):
        return model_admin.has_delete_permission(request)
    return model_admin.has_view_or_change_permission(request)


@pytest.fixture
def world(settings):
    # Refused requests count against the address's rate too; the matrix sends
    # hundreds from one address.
    settings.CODEX_API_ANON_RATE = "100000/minute"
    return make_world()


@pytest.fixture
def api_clients(role_users):
    clients = {None: APIClient()}
    for role, user in role_users.items():
        _, key = make_token(user)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        clients[role] = client
    return clients


def test_the_api_by_role(world, api_clients, role_users):
    """Every method of every endpoint: the listed roles are let through, the
    others 403; a method no role is listed for is never served."""
    checked = 0
    for pattern, methods in API.items():
        url = concrete(pattern, world, role_users["operator"].pk)
        for method in METHODS:
            allowed = methods.get(method)
            response = getattr(api_clients[None], method)(url, {}, format="json")
            assert response.status_code == 401, (method, url)
            assert response.json()["error"]["code"] == "not_authenticated"
            for role in ("team", "integrator", "operator"):
                client = api_clients[role]
                response = getattr(client, method)(url, {}, format="json")
                assert response.status_code < 500, (role, url, response.content)
                if allowed is None:
                    assert response.status_code in (403, 405), (role, method, url)
                    assert set(response.json()) == {"error"}
                elif role in allowed:
                    assert response.status_code not in (401, 403), (role, url)
                else:
                    assert response.status_code == 403, (role, method, url)
                checked += 1
    assert checked == 3 * len(METHODS) * len(API)


def test_the_api_schema_is_public(world, api_clients):
    for pattern in sorted(PUBLIC_API):
        for client in api_clients.values():
            assert client.get("/" + pattern).status_code == 200, pattern


def test_a_browser_session_does_not_bypass_api_roles(world, session_clients):
    """SessionAuthentication is on too: a signed-in integrator is still 403 on
    the team's resources, and anonymous browsers 401."""
    assert session_clients[None].get("/api/escalations/").status_code == 401
    assert session_clients["integrator"].get("/api/escalations/").status_code == 403
    assert session_clients["team"].get("/api/escalations/").status_code == 200


def test_team_pages_follow_the_api_roles(world, session_clients, role_users):
    """Every method of every page. An integrator's own task: the world's task
    is made its own so that its task pages answer (others' are 404)."""
    world.task.requested_by = role_users["integrator"]
    world.task.save(update_fields=["requested_by"])
    checked = 0
    for pattern, methods in PAGES.items():
        url = concrete(pattern, world, role_users["operator"].pk)
        for method in METHODS:
            allowed = methods.get(method)
            response = getattr(session_clients[None], method)(url)
            if pattern == "":
                # The root redirects to the dashboard, which redirects to login.
                assert response.status_code == 302
                response = session_clients[None].get(response["Location"])
            assert _is_login_redirect(response, "/accounts/login/?next="), (
                method,
                url,
            )
            for role in ("team", "integrator", "operator"):
                response = getattr(session_clients[role], method)(url)
                assert not _is_login_redirect(response, "/accounts/login/"), (role, url)
                assert response.status_code < 500, (role, method, url)
                if allowed is None:
                    assert response.status_code in (403, 405), (role, method, url)
                elif role in allowed:
                    assert response.status_code not in (401, 403, 405), (role, url)
                else:
                    assert response.status_code == 403, (role, method, url)
                    assert b"Not for your role" in response.content, (role, url)
                checked += 1
    assert checked >= 3 * len(METHODS) * (len(PAGES) - 1)


def test_sign_in_pages(world, session_clients, role_users):
    for pattern in sorted(AUTH_OPEN):
        url = concrete(pattern, world, role_users["operator"].pk)
        if pattern == "accounts/logout/":
            response = session_clients[None].post(url)
        else:
            response = session_clients[None].get(url)
        assert response.status_code in (200, 302), url
        assert not _is_login_redirect(response, "/accounts/login/?next="), url
    for pattern in sorted(AUTH_LOGIN):
        url = "/" + pattern
        assert _is_login_redirect(session_clients[None].get(url), "/accounts/login/")
        assert session_clients["team"].get(url).status_code == 200, url


def test_the_admin_is_for_operators_only(world, session_clients, role_users):
    """Every admin URL: anonymous, team and integrator are sent to the admin
    login; the operator is let in (a missing object answers a redirect to the
    console or 404, never 403 or a login)."""
    operator_pk = role_users["operator"].pk
    checked = 0
    for pattern, kind in sorted(admin_patterns().items()):
        url = concrete(pattern, world, operator_pk)
        if kind == "open":
            assert session_clients[None].get(url).status_code in (200, 302), url
            continue
        for role, method in itertools.product((None, "team", "integrator"), METHODS):
            response = getattr(session_clients[role], method)(url)
            if pattern == "admin/(?P<url>.*)$" and role is not None:
                # The catch-all answers 404 to a signed-in non-staff user
                # (Django's ADMIN final_catch_all_view): nothing is revealed.
                assert response.status_code in (302, 404), (role, url)
                continue
            assert _is_login_redirect(response, "/admin/login/"), (role, method, url)
            checked += 1
        if "/transition/" in pattern:
            continue  # the operator's side: test_unknown_fsm_transition_is_404
        response = session_clients["operator"].get(url)
        assert not _is_login_redirect(response, "/admin/login/"), url
        if pattern == "admin/autocomplete/":
            # Without app_label/model_name/field_name Django answers 403 to
            # everyone: a malformed query, not a role decision.
            assert response.status_code == 403
            continue
        if kind == "model" and not _console_allows(pattern, role_users["operator"]):
            # The ModelAdmin refuses this action to everyone (a record that
            # is never deleted or added by hand): 403 even for a superuser.
            assert response.status_code == 403, url
            continue
        assert response.status_code not in (401, 403), url
        assert response.status_code < 500, (url, response.status_code)
    assert checked > 200 * len(METHODS)


def test_the_webhook_answers_to_the_signature_only(
    world, session_clients, role_users, settings
):
    settings.GITHUB_WEBHOOK_SECRET = "matrix-webhook-secret"
    body = json.dumps({"zen": "Keep it logically awesome."}).encode()
    headers = {"HTTP_X_GITHUB_EVENT": "ping", "HTTP_X_GITHUB_DELIVERY": "matrix-1"}
    for pattern in sorted(WEBHOOKS):
        url = "/" + pattern
        for role, client in session_clients.items():
            response = client.post(
                url, body, content_type="application/json", **headers
            )
            assert response.status_code == 401, role
        operator_token = APIClient()
        _, key = make_token(role_users["operator"])
        operator_token.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        response = operator_token.post(
            url, body, content_type="application/json", **headers
        )
        assert response.status_code == 401
        signed = Client(enforce_csrf_checks=True).post(
            url,
            body,
            content_type="application/json",
            HTTP_X_HUB_SIGNATURE_256=sign(body, settings.GITHUB_WEBHOOK_SECRET),
            **headers,
        )
        assert signed.status_code == 200, signed.content


def test_healthz_is_open(session_clients):
    for pattern in sorted(OPEN):
        for client in session_clients.values():
            assert client.get("/" + pattern).status_code == 200


def test_monitoring_is_for_operators_and_the_metrics_token(
    world, session_clients, settings
):
    settings.CODEX_METRICS_TOKEN = "m" * 32
    for pattern in sorted(MONITORING):
        for role, client in session_clients.items():
            status = client.get("/" + pattern).status_code
            if role is None:
                assert status == 401, (pattern, role)
            elif role == "operator":
                assert status in (200, 503), (pattern, role, status)
            else:
                assert status == 403, (pattern, role, status)
        scraper = Client(HTTP_AUTHORIZATION="Bearer " + "m" * 32)
        assert scraper.get("/" + pattern).status_code in (200, 503)


def test_unknown_fsm_transition_is_404(world, role_users):
    client = Client(raise_request_exception=False)
    client.force_login(role_users["operator"])
    url = f"/admin/claims/backlogrun/{world.backlog_run_id}/transition/nothing/"
    assert client.get(url).status_code == 404
