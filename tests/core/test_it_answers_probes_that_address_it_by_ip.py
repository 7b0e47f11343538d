"""/healthz answers a probe that addresses the container by its IP address
(Docker, Kubernetes, a load balancer), which no ALLOWED_HOSTS lists; every
other page still refuses a host it does not know."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_healthz_answers_any_host(client):
    for host in ("172.18.0.5", "10.0.0.7:8000", "[fd00::5]:8000"):
        response = client.get("/healthz", HTTP_HOST=host)
        assert response.status_code == 200, host
        assert response.json() == {"status": "ok", "database": "ok"}
    assert client.head("/healthz", HTTP_HOST="172.18.0.5").status_code == 200
    assert client.post("/healthz", HTTP_HOST="172.18.0.5").status_code == 405


def test_other_paths_keep_the_host_check(client):
    for path in ("/admin/login/", "/api/tasks/", "/healthz/", "/healthzz", "/"):
        assert client.get(path, HTTP_HOST="172.18.0.5").status_code == 400, path


def test_healthz_behind_tls_is_not_redirected_for_a_plain_probe(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/healthz", HTTP_HOST="172.18.0.5").status_code == 200
    assert client.get("/admin/login/").status_code == 301
