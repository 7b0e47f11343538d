"""The agents' Claude client: a role's Messages API client with the credential
every worker uses now (`codex.configuration.credentials`, which rotates it
when the API rejects one)."""

from __future__ import annotations

from typing import Any

from codex.configuration.credentials import current_credential
from integrations.anthropic.client import SOURCE, ModelClient, model_client


def claude_client(role: str | None = None, *, http_client: Any = None) -> ModelClient:
    """The client the settings describe for `role`, with the current API key.

    Raises ModelNotConfigured when no API key is configured.
    """
    return model_client(
        api_key=current_credential(SOURCE), role=role, http_client=http_client
    )
