"""Every response carries the Content-Security-Policy (django-csp): own-origin
scripts only, no framing; the Swagger UI alone may use inline styles."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def policy(response) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    return {
        part.strip().split(" ", 1)[0]: part.strip().partition(" ")[2]
        for part in header.split(";")
        if part.strip()
    }


@pytest.mark.parametrize(
    "url",
    [
        "/accounts/login/",
        "/dashboard/",
        "/tasks/new/",
        "/inbox/",
        "/admin/",
        "/admin/tasks/task/",
        "/api/tasks/",
        "/api/docs/",
        "/no-such-page/",
    ],
)
def test_every_page_has_the_policy(console, url):
    directives = policy(console.get(url))
    assert directives["script-src"] == "'self'"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["form-action"] == "'self'"
    assert "unsafe-eval" not in str(directives)


def test_only_the_swagger_ui_allows_inline_styles(console):
    assert "'unsafe-inline'" in policy(console.get("/api/docs/"))["style-src"]
    assert "'unsafe-inline'" not in policy(console.get("/dashboard/"))["style-src"]
