"""`Authorization: Token <key>` (or `Bearer <key>`) against hashed, revocable
API tokens."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from codex.accounts.models import ApiToken
from codex.accounts.permissions import ROLE_GROUPS, remember_roles
from codex.core.api.throttles import FailedAuthThrottle

# Writing last_used_at on every request would turn each read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=5)


class HashedTokenAuthentication(authentication.BaseAuthentication):
    """Authenticates API clients by the SHA-256 of their token key."""

    keyword = "Token"
    # `Bearer <key>` is what most HTTP clients send for a token: the same key.
    keywords = (b"token", b"bearer")

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() not in self.keywords:
            return None
        failures = FailedAuthThrottle()
        if failures.exhausted(request):
            # Too many refused tokens from this address: not even looked at.
            raise exceptions.Throttled(failures.wait())
        if len(header) != 2:
            failures.record_failure(request)
            raise exceptions.AuthenticationFailed(
                "Invalid token header: expected 'Token <key>' (or 'Bearer <key>')."
            )
        try:
            key = header[1].decode()
        except UnicodeError:
            failures.record_failure(request)
            raise exceptions.AuthenticationFailed(
                "Invalid token header: the key is not text."
            ) from None
        token = ApiToken.objects.authenticate(key, role_groups=ROLE_GROUPS)
        if token is None or not token.user.is_active:
            failures.record_failure(request)
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        remember_roles(token.user, token.user_role_groups)
        now = timezone.now()
        if (
            token.last_used_at is None
            or now - token.last_used_at > LAST_USED_RESOLUTION
        ):
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request) -> str:
        return self.keyword
