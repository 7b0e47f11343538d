"""A loopback Messages API and a client pointed at it."""

from __future__ import annotations

import pytest

from integrations.anthropic.client import ModelClient
from tests.model_stub import ModelStub


@pytest.fixture
def stub():
    with ModelStub() as server:
        yield server


@pytest.fixture
def client(stub):
    model_client = ModelClient(
        api_key="sk-test-key", base_url=stub.url, timeout=5, max_retries=0
    )
    yield model_client
    model_client.close()
