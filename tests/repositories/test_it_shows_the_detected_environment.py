"""Operators see what Codex detected: beside each blank field it fills (the
admin), as a block of its own, and read-only in the API."""

from __future__ import annotations

import pytest
from django.urls import reverse

from codex.repositories.models import Repository
from tests.core.api.conftest import assert_error_shape, role_client
from tests.factories import make_repository

pytestmark = pytest.mark.django_db

DETECTED = {
    "ecosystems": [{"name": "javascript", "notes": []}],
    "setup_command": "npm ci --no-audit --no-fund",
    "setup_hosts": ["registry.npmjs.org"],
    "test_command": "npm test",
    "notes": ["pnpm-lock.yaml: pnpm is not installed where commands run"],
}


def detected_repository(**fields) -> Repository:
    repository = make_repository("https://github.com/acme/detected", **fields)
    Repository.objects.filter(pk=repository.pk).update(
        detected_environment=DETECTED, detected_at_commit="0123456789abcdef"
    )
    return Repository.objects.get(pk=repository.pk)


def test_the_admin_shows_the_detection_beside_each_blank_field(console):
    repository = detected_repository(test_command="npx jest")
    page = console.get(
        reverse("admin:repositories_repository_change", args=[repository.pk])
    ).content.decode()
    assert "Detected: npm ci --no-audit --no-fund (used while blank)" in page
    assert "Detected: registry.npmjs.org (used while blank)" in page
    # A filled field is the repository's own: no detected value beside it.
    assert "Detected: npm test" not in page
    assert "0123456789ab" in page and "pnpm is not installed" in page


def test_the_admin_says_when_nothing_was_detected_yet(console):
    repository = make_repository("https://github.com/acme/fresh")
    page = console.get(
        reverse("admin:repositories_repository_change", args=[repository.pk])
    ).content.decode()
    assert "nothing detected yet" in page and "Detected:" not in page


def test_the_api_shows_the_detection_and_does_not_take_it():
    repository = detected_repository()
    client = role_client("operator", "ops")
    body = client.get(f"/api/repositories/{repository.pk}/").json()
    assert body["detected_environment"]["setup_command"] == DETECTED["setup_command"]
    assert body["detected_at_commit"] == "0123456789abcdef"
    response = client.post(
        "/api/repositories/",
        {"url": "https://github.com/acme/other", "detected_environment": {}},
        format="json",
    )
    assert "detected_environment" in assert_error_shape(response, 400)["fields"]
