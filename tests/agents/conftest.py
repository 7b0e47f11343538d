"""A loopback Messages API, a client pointed at it, and a worktree."""

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


@pytest.fixture
def worktree(tmp_path):
    root = tmp_path / "worktree"
    root.mkdir()
    (root / "README.md").write_text("# Sample\n\nHello world.\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def greet():\n    return 'hello'\n")
    return root
