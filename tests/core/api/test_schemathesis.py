"""Property-based tests of the API against its own OpenAPI schema (schemathesis).

Every operation of /api/schema/ (the webhook route excepted: it is signature-
authenticated and tested in tests/webhooks) is called with generated requests,
valid (positive) and invalid (negative), as an operator, against a real test
database holding one of each resource. Whatever is sent, the API must never
answer 5xx, and every answer must be documented: status code, content type and
body schema. Bounded and derandomized: a few examples per operation and mode,
the same ones on every run.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.cache import caches
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from codex.wsgi import application
from tests.core.api.resources import World, make_world
from tests.factories import make_token, make_user

# The schema endpoint is public (AllowAny): no token or database is needed to
# load it, so it is read once, when the module is collected.
schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE], max_examples=8
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]

# Detail routes whose {id} names a row of the World; positive cases use it so
# they reach the 200 branch and its response schema, not only 404.
ROW_OF_PATH = {
    "/api/tasks/{task_id}/": "task_id",
    "/api/escalations/{id}/": "escalation_id",
    "/api/repositories/{id}/": "repository_id",
    "/api/agent-instances/{id}/": "instance_id",
    "/api/agent-runs/{id}/": "run_id",
    "/api/claims/{id}/": "claim_id",
    "/api/backlog-runs/{id}/": "backlog_run_id",
    "/api/child-reports/{id}/": "child_report_id",
}


@pytest.fixture
def world(transactional_db) -> dict:
    """One of each resource, committed (the WSGI app opens its own transaction
    scope), and an operator's token."""
    made: World = make_world()
    _, key = make_token(make_user("operator", is_staff=True, is_superuser=True))
    return {
        "headers": {"Authorization": f"Token {key}"},
        "task_id": made.task.task_id,
        "escalation_id": made.escalation.pk,
        "repository_id": made.repository_id,
        "instance_id": made.instance_id,
        "run_id": made.run_id,
        "claim_id": made.claim_id,
        "backlog_run_id": made.backlog_run_id,
        "child_report_id": made.child_report_id,
    }


def non_integer_id(case) -> bool:
    """A negative case whose integer {id} is not an integer: Django's `<int:pk>`
    route does not match, so the answer is Django's HTML 404, not the API's JSON
    error (see test_non_integer_id_gets_the_json_error_shape)."""
    value = (case.path_parameters or {}).get("id")
    return value is not None and not str(value).isdigit()


def use_existing_row(case, world: dict) -> None:
    """In positive mode, point a detail route's {id} at a row that exists."""
    meta = case.meta
    if meta is None or meta.generation.mode is not GenerationMode.POSITIVE:
        return
    path = case.operation.path
    for template, key in ROW_OF_PATH.items():
        if path.startswith(template):
            name = "task_id" if template.startswith("/api/tasks/") else "id"
            case.path_parameters = {**(case.path_parameters or {}), name: world[key]}
            return


@schema.exclude(path_regex=r"^/api/webhooks/").parametrize()
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
def test_api_conforms_to_its_schema(case, world):
    # Throttle counts live in the cache; generated traffic must not reach 429.
    caches["throttle"].clear()
    use_existing_row(case, world)
    if non_integer_id(case):
        response = case.call(headers=world["headers"])
        assert response.status_code == 404, response.text
        return
    case.call_and_validate(headers=world["headers"], checks=CHECKS)


def test_non_integer_id_gets_the_json_error_shape(world, client):
    response = client.get("/api/escalations/abc/", headers=world["headers"])
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert set(response.json()) == {"error"}
