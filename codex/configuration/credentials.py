"""Rotating between several configured credentials of one outside service.

Integrations ask `current_credential(source)` for the key to use; when the
service rejects it (docs/domain/concurrency.md#error-classification), the workers call
`rotate_credential(source)`, which moves every worker to the next one.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from codex.configuration.models.credential import ActiveCredential

# The configuration key whose stored secret is a source's first credential.
CREDENTIAL_KEYS = {"github": "github.token", "claude": "anthropic.api_key"}


def configured_credentials(source: str) -> list[str]:
    """The credentials configured for `source`, in order (may be empty): the
    one saved in the console (`github.token`, `anthropic.api_key`, read with
    get_config) first, then the environment's (GITHUB_TOKEN,
    ANTHROPIC_API_KEY, several comma-separated), without repeats."""
    from codex.configuration.config import get_config

    keys = []
    if source in CREDENTIAL_KEYS:
        stored = get_config(CREDENTIAL_KEYS[source])
        if stored:
            keys.append(stored.strip())
    for key in settings.CODEX_CREDENTIALS.get(source) or []:
        if key not in keys:
            keys.append(key)
    return keys


def current_credential(source: str) -> str | None:
    """The credential every worker should use for `source` now."""
    keys = configured_credentials(source)
    if not keys:
        return None
    row = ActiveCredential.objects.of(source)
    return keys[(row.index if row else 0) % len(keys)]


def rotate_credential(source: str) -> bool:
    """Move to the next configured credential; False when there is no other.

    Two workers rotating for the same rejection move it once: the UPDATE only
    applies to the index they both read.
    """
    keys = configured_credentials(source)
    if len(keys) < 2:
        return False
    row, _ = ActiveCredential.objects.get_or_create(source=source)
    ActiveCredential.objects.filter(pk=row.pk, index=row.index).update(
        index=(row.index + 1) % len(keys),
        rotations=F("rotations") + 1,
        rotated_at=timezone.now(),
    )
    return True
