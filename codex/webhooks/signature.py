"""The X-Hub-Signature-256 check: HMAC-SHA256 of the raw body with the secret."""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def sign(body: bytes, secret: str) -> str:
    """The header value GitHub sends for `body` signed with `secret`."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return PREFIX + digest


def signature_is_valid(body: bytes, secret: str, header: str | None) -> bool:
    """Whether `header` is the signature of `body` with `secret`, compared in
    constant time so the response time leaks nothing about the expected value."""
    if not secret or not header or not header.startswith(PREFIX):
        return False
    return hmac.compare_digest(sign(body, secret).encode(), header.strip().encode())
