"""The agents' Claude client carries the credential every worker uses now,
and the next one after a rotation; without any, the run is not configured."""

from __future__ import annotations

import pytest

from agents.claude import claude_client
from codex.configuration.credentials import rotate_credential
from integrations.anthropic.client import ModelNotConfigured
from tests.model_stub import message

pytestmark = pytest.mark.django_db


def test_the_client_sends_the_current_key_and_the_next_after_a_rotation(stub, settings):
    settings.CODEX_CREDENTIALS = {"claude": ["sk-first", "sk-second"]}
    settings.ANTHROPIC_BASE_URL = stub.url
    settings.CODEX_MODEL_PLANNER = "claude-opus-4-6"

    for _ in range(2):
        client = claude_client(role="planner")
        stub.add(message("ok"))
        client.send(messages=[{"role": "user", "content": "hi"}])
        client.close()
        assert rotate_credential("claude")

    first, second = (request.headers["authorization"] for request in stub.requests)
    assert (first, second) == ("Bearer sk-first", "Bearer sk-second")
    assert stub.bodies[0]["model"] == "claude-opus-4-6"


def test_without_a_key_the_agents_are_not_configured(settings):
    settings.CODEX_CREDENTIALS = {"claude": []}
    with pytest.raises(ModelNotConfigured):
        claude_client()
