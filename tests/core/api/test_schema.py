"""The OpenAPI schema: valid, warning-free, every 4xx declared; Swagger UI local."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
import yaml
from django.core.management import call_command

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("openapi")]


def generate() -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_spectacular_validates_without_warnings_or_errors():
    out, err = generate()
    assert "warning" not in err.lower(), err
    assert "error" not in err.lower(), err
    schema = yaml.safe_load(out)
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Codex API"


def test_every_operation_declares_its_errors_in_the_one_shape():
    schema = yaml.safe_load(generate()[0])
    operations = [
        (path, method, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if path.startswith("/api/") and not path.startswith("/api/webhooks/")
    ]
    assert len(operations) > 20
    for path, method, operation in operations:
        responses = operation["responses"]
        for code in ("401", "403", "429"):
            assert code in responses, (path, method, code)
        if method == "get":
            assert {"400", "404"} <= set(responses), (path, method)
        if method == "post":
            assert {"400", "415", "422"} <= set(responses), (path, method)
            headers = [
                p["name"]
                for p in operation.get("parameters", [])
                if p["in"] == "header"
            ]
            assert "Idempotency-Key" in headers, path
        for code, response in responses.items():
            if code.startswith("4"):
                ref = response["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/Error"), (path, method, code)


def test_actions_that_can_conflict_declare_409():
    paths = yaml.safe_load(generate()[0])["paths"]
    for action in ("pause", "resume", "cancel", "retry"):
        assert "409" in paths[f"/api/tasks/{{task_id}}/{action}/"]["post"]["responses"]
    assert "409" in paths["/api/escalations/{id}/resolve/"]["post"]["responses"]


def test_schema_endpoint_serves_openapi(client):
    response = client.get(
        "/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert "/api/tasks/" in body["paths"]
    assert "/api/schema/" not in body["paths"]


# An address on a content delivery network (not "cdn" anywhere: a random CSP
# nonce may hold those letters).
CDN_URL = re.compile(r"//[^\s\"'<>]*cdn", re.IGNORECASE)


def test_docs_serve_swagger_ui_from_local_static_files(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert (
        "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    )
    assert not CDN_URL.search(html)
    # The start-up script is a file of its own (no inline script for the CSP).
    assert "<script>" not in html
    assert 'src="/api/docs/?script=' in html
    script = client.get("/api/docs/", {"script": ""})
    assert script["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in script.content.decode()
    assert not CDN_URL.search(script.content.decode())


def test_the_command_and_the_view_describe_one_document(client):
    """`manage.py spectacular` (SPECTACULAR_SETTINGS) and /api/schema/ (the
    view's OPENAPI_SETTINGS) give the same title, version and enum names."""
    out = StringIO()
    call_command("spectacular", "--format", "openapi-json", stdout=out)
    command = json.loads(out.getvalue())
    view = client.get(
        "/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    ).json()
    assert command["info"] == view["info"]
    assert command["info"]["title"] == "Codex API"
    assert sorted(command["components"]["schemas"]) == sorted(
        view["components"]["schemas"]
    )
    assert "TaskStatusEnum" in view["components"]["schemas"]
