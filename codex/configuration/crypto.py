"""Secrets at rest: Fernet encryption with rotatable keys, and masking for display.

Keys come from CODEX_FERNET_KEYS (comma-separated Fernet keys; the first encrypts,
all decrypt), read from Django settings or else the environment. A new key goes
first, `manage.py rotate_secrets` re-encrypts every secret with it, and only then
may the old key be dropped.

Without keys, DEBUG and test runs derive one stable development key from
SECRET_KEY (and log that they do), so a fresh checkout works; anywhere else
missing keys are a configuration error, because a key that silently changed
would make every stored secret unreadable.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
from collections.abc import Callable

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)

KEYS_SETTING = "CODEX_FERNET_KEYS"
MASK = "••••"
# Below this length even four characters give away too much of a secret.
MIN_LENGTH_TO_SHOW_TAIL = 12

__all__ = [
    "InvalidToken",
    "decrypt",
    "encrypt",
    "encrypted_elsewhere",
    "fernet",
    "mask",
    "register_encrypted",
    "rotate",
]


# Other apps' encrypted rows, re-encrypted with the settings' secrets by
# `rotate_secrets`: label (plural, as said to the operator) -> a function
# re-encrypting them all and answering how many. Registered from ready().
_ENCRYPTED_ELSEWHERE: dict[str, Callable[[], int]] = {}


def register_encrypted(label: str, reencrypt_all: Callable[[], int]) -> None:
    """Have `rotate_secrets` re-encrypt an app's own encrypted rows too
    (`label`, e.g. "cached token(s)"), so that the configuration app need not
    know the app."""
    _ENCRYPTED_ELSEWHERE[label] = reencrypt_all


def encrypted_elsewhere() -> dict[str, Callable[[], int]]:
    """The other apps' re-encryptions, by label."""
    return dict(_ENCRYPTED_ELSEWHERE)


class SecretUnreadable(Exception):
    """A stored secret cannot be decrypted with any configured key."""


def _configured_keys() -> list[str]:
    value = getattr(settings, KEYS_SETTING, None)
    if value is None:
        value = os.environ.get(KEYS_SETTING, "")
    if isinstance(value, str):
        value = value.split(",")
    return [key.strip() for key in value if key and key.strip()]


def development_key() -> str:
    """The Fernet key derived from SECRET_KEY for DEBUG and test runs."""
    digest = hashlib.sha256(
        b"codex-configuration-fernet:" + settings.SECRET_KEY.encode()
    ).digest()
    return base64.urlsafe_b64encode(digest).decode()


_warned = False


def fernet() -> MultiFernet:
    """The MultiFernet of the configured keys, current key first."""
    global _warned
    keys = _configured_keys()
    if not keys:
        if not (settings.DEBUG or getattr(settings, "TESTING", False)):
            raise ImproperlyConfigured(
                f"{KEYS_SETTING} must be set: comma-separated Fernet keys, newest "
                "first (make one with: python -c 'from cryptography.fernet import "
                "Fernet; print(Fernet.generate_key().decode())')"
            )
        if not _warned:
            logger.warning(
                "%s is not set: encrypting secrets with a development key derived "
                "from SECRET_KEY (acceptable only with DEBUG or in tests)",
                KEYS_SETTING,
            )
            _warned = True
        keys = [development_key()]
    fernets = []
    for position, key in enumerate(keys, start=1):
        try:
            fernets.append(Fernet(key))
        except (ValueError, TypeError):
            # Never echo the key itself: it may be a real one with a typo.
            raise ImproperlyConfigured(
                f"{KEYS_SETTING} entry #{position} is not a Fernet key "
                "(32 url-safe base64-encoded bytes)"
            ) from None
    return MultiFernet(fernets)


def encrypt(plaintext: str) -> str:
    """Encrypt with the current (first) key."""
    return fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    """Decrypt with any configured key; SecretUnreadable when none fits."""
    try:
        return fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            f"a stored secret cannot be decrypted with the keys in {KEYS_SETTING}; "
            "was a key removed before rotate_secrets ran?"
        ) from None


def rotate(token: str) -> str:
    """The same secret re-encrypted with the current key."""
    try:
        return fernet().rotate(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            f"a stored secret cannot be decrypted with the keys in {KEYS_SETTING}"
        ) from None


def mask(plaintext: str | None) -> str:
    """ "••••" plus at most the last four characters, and those only when the
    secret is long enough that they do not give it away."""
    if not plaintext:
        return ""
    if len(plaintext) < MIN_LENGTH_TO_SHOW_TAIL:
        return MASK
    return MASK + plaintext[-4:]
