"""Test helpers for configuration: Fernet keys and a stored secret."""

from __future__ import annotations

import json

from cryptography.fernet import Fernet

from codex.configuration.models import Setting
from tests.shared_folder import WEBHOOKS

KEY_A = Fernet.generate_key().decode()
KEY_B = Fernet.generate_key().decode()
TOKEN = "ghp_s3cretTokenValue1234567890abcd"


def stored_column(setting: Setting) -> str:
    """The raw `value` column, as the database holds it."""
    return Setting.objects.filter(pk=setting.pk).values_list("value", flat=True)[0]


def webhook_issue(action: str) -> dict:
    """The `issue` object of a real GitHub `issues` webhook payload."""
    path = WEBHOOKS / "issues" / f"{action}.payload.json"
    return json.loads(path.read_text())["issue"]
