"""API throttles, counted in a cache every web process shares.

The counts live in CACHES["throttle"]: Redis when REDIS_URL is set, the
database cache otherwise (its table is made by a migration), so three gunicorn
workers grant the rate once, not three times. Rates are read per request so an
operator (or a test) can change them in settings.

Who is counted:

- a signed-in caller, per user: CODEX_API_USER_RATE;
- a caller without credentials, per address: CODEX_API_ANON_RATE, counted
  before the permission check so a refused (401) request counts too
  (`ApiMixin.initial`);
- a wrong or revoked token, per address: CODEX_API_FAILED_AUTH_RATE. Past it,
  the address is answered 429 without its token being looked at, so keys
  cannot be guessed at the speed of the server (`HashedTokenAuthentication`).

A rate of `off` (or one of at least UNLIMITED_PER_SECOND requests a second,
which no client of one web server reaches) turns its throttle off: the
request is let through without reading or writing the cache (DRF's
SimpleRateThrottle passes a rate of None). Counting such a rate would cost a
request two cache round trips, five statements with the database cache, and
a history list as long as the rate allows.
"""

from __future__ import annotations

from django.conf import settings
from django.core.cache import caches
from rest_framework.throttling import (
    AnonRateThrottle,
    SimpleRateThrottle,
    UserRateThrottle,
)

DEFAULT_USER_RATE = "600/minute"
DEFAULT_ANON_RATE = "60/minute"
DEFAULT_FAILED_AUTH_RATE = "20/minute"
THROTTLE_CACHE = "throttle"
OFF = frozenset({"off", "none", "unlimited", ""})
UNLIMITED_PER_SECOND = 1000


def configured_rate(name: str, default: str) -> str | None:
    """The rate the setting `name` gives ("600/minute"), or None when it is
    off or effectively unlimited (see the module docstring)."""
    rate = getattr(settings, name, default)
    if rate is None or str(rate).strip().lower() in OFF:
        return None
    count, duration = SimpleRateThrottle.parse_rate(None, rate)
    return None if count >= UNLIMITED_PER_SECOND * duration else rate


def client_address(request) -> str | None:
    """The caller's address: REMOTE_ADDR, or with CODEX_PROXY_COUNT proxies in
    front the address the outermost trusted one saw (X-Forwarded-For read from
    the right, as DRF's NUM_PROXIES does). The sign-in lockout uses it too."""
    remote = request.META.get("REMOTE_ADDR")
    proxies = getattr(settings, "CODEX_PROXY_COUNT", 0)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    if not proxies or not forwarded:
        return remote
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    return hops[-min(proxies, len(hops))] if hops else remote


class SharedCacheMixin:
    """Count in CACHES["throttle"] (DRF's default is the default cache), by
    `client_address`."""

    @property
    def cache(self):
        return caches[THROTTLE_CACHE]

    def get_ident(self, request) -> str:
        return client_address(request) or ""


class ApiUserRateThrottle(SharedCacheMixin, UserRateThrottle):
    """Per user (per IP when anonymous): CODEX_API_USER_RATE, default 600/minute."""

    def get_rate(self) -> str | None:
        return configured_rate("CODEX_API_USER_RATE", DEFAULT_USER_RATE)


class ApiAnonRateThrottle(SharedCacheMixin, AnonRateThrottle):
    """Per IP for anonymous callers: CODEX_API_ANON_RATE, default 60/minute."""

    def get_rate(self) -> str | None:
        return configured_rate("CODEX_API_ANON_RATE", DEFAULT_ANON_RATE)


class FailedAuthThrottle(SharedCacheMixin, SimpleRateThrottle):
    """Per IP, the requests whose token was refused."""

    scope = "failed_auth"

    def get_rate(self) -> str | None:
        return configured_rate("CODEX_API_FAILED_AUTH_RATE", DEFAULT_FAILED_AUTH_RATE)

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {
            "scope": self.scope,
            "ident": self.get_ident(request),
        }

    def exhausted(self, request) -> bool:
        """Whether the address has used up its failures (counts nothing)."""
        if self.rate is None:
            return False
        self.key = self.get_cache_key(request, None)
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        return len(self.history) >= self.num_requests

    def record_failure(self, request) -> None:
        """Count one refused token for the address."""
        if self.rate is not None and not self.exhausted(request):
            self.throttle_success()


API_THROTTLES = [ApiAnonRateThrottle, ApiUserRateThrottle]
