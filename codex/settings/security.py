"""Keys, host names, sign-in and the HTTP security headers."""

from __future__ import annotations

import sys
from datetime import timedelta

from cryptography.fernet import Fernet
from csp.constants import NONE as CSP_NONE
from csp.constants import SELF as CSP_SELF
from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

from codex.env import env_bool, env_int, env_list, env_str, kept_key
from codex.settings.base import DEBUG, TESTING, VAR_DIR

# --- Keys --------------------------------------------------------------------
# SECRET_KEY signs sessions; CODEX_FERNET_KEYS (comma-separated, newest first)
# encrypt stored secrets. Production (DEBUG off with a DATABASE_URL, or
# CODEX_REQUIRE_SECRET_KEY=1) must be given both: a key that silently changed
# would log everyone out and make every stored secret unreadable. A checkout's
# `make run` (DEBUG, or the embedded SQLite default) makes both under VAR_DIR on
# its first run and keeps them there. Tests use fixed keys and write nothing.
_require_keys = env_bool("CODEX_REQUIRE_SECRET_KEY", False)
PRODUCTION = not TESTING and (
    _require_keys or not (DEBUG or not env_str("DATABASE_URL", ""))
)
LOCAL_KEYS = not (TESTING or PRODUCTION)
_secret_key = env_str("SECRET_KEY", "")
_fernet_keys = env_list("CODEX_FERNET_KEYS", [])
if not _secret_key and _require_keys:
    raise ImproperlyConfigured("SECRET_KEY must be set (CODEX_REQUIRE_SECRET_KEY=1)")
if TESTING:
    _secret_key = _secret_key or "codex-insecure-development-key-" + "x" * 20
elif LOCAL_KEYS:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    _made = []
    if not _secret_key:
        _secret_key, _new = kept_key(VAR_DIR / "secret_key", get_random_secret_key)
        _made += [f"SECRET_KEY in {VAR_DIR / 'secret_key'}"] if _new else []
    if not _fernet_keys:
        _key, _new = kept_key(
            VAR_DIR / "fernet_key", lambda: Fernet.generate_key().decode()
        )
        _fernet_keys = [_key]
        _made += [f"CODEX_FERNET_KEYS in {VAR_DIR / 'fernet_key'}"] if _new else []
    if _made:
        # Said once: the next runs find the files and say nothing.
        print(
            "Codex: made local development keys and kept them for the next runs: "
            + "; ".join(_made)
            + ". Back them up with the database: stored secrets cannot be read "
            "without the Fernet key. Production sets SECRET_KEY and "
            "CODEX_FERNET_KEYS instead (README.md, Keys).",
            file=sys.stderr,
        )
else:
    _missing = [
        name
        for name, value in (
            ("SECRET_KEY", _secret_key),
            ("CODEX_FERNET_KEYS", _fernet_keys),
        )
        if not value
    ]
    if _missing:
        raise ImproperlyConfigured(
            f"{' and '.join(_missing)} must be set in production (DEBUG off with a "
            "DATABASE_URL, or CODEX_REQUIRE_SECRET_KEY=1). Make a SECRET_KEY "
            "with: python -c 'import secrets; print(secrets.token_urlsafe(50))'; "
            "a Fernet key with: python -c "
            "'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())' (README.md, Keys)"
        )
for _position, _key in enumerate(_fernet_keys, start=1):
    try:
        Fernet(_key)
    except ValueError:
        # Never echo the key itself: it may be a real one with a typo.
        raise ImproperlyConfigured(
            f"CODEX_FERNET_KEYS entry #{_position} is not a Fernet key "
            "(32 url-safe base64-encoded bytes)"
        ) from None
SECRET_KEY = _secret_key
# Comma-separated Fernet keys, newest first (see Keys above); empty in tests.
CODEX_FERNET_KEYS = _fernet_keys

# The host names the console is reached at. Production must name them (the
# loopback names stay allowed for the container's health check); a checkout
# answers on loopback unless told more.
_LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [])
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS must be set in production: the host names the console is "
        "reached at, comma-separated (e.g. ALLOWED_HOSTS=codex.example.com)"
    )
ALLOWED_HOSTS = ALLOWED_HOSTS + [h for h in _LOOPBACK_HOSTS if h not in ALLOWED_HOSTS]
# Origins allowed to POST forms besides the console's own (a proxy that changes
# the scheme or port): full origins such as https://codex.example.com.
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
for _origin in CSRF_TRUSTED_ORIGINS:
    if not _origin.startswith(("https://", "http://")):
        raise ImproperlyConfigured(
            f"CSRF_TRUSTED_ORIGINS entry {_origin!r} is not an origin: write it "
            "with its scheme, e.g. https://codex.example.com"
        )

AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation."
        "UserAttributeSimilarityValidator"
    },
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Security ----------------------------------------------------------------
# Sign-in throttling and lockout on /accounts/login/ and /admin/login/
# (django-axes): failures are counted per (account, address) pair in the
# database, so every gunicorn worker and machine sees the same count; a locked
# pair is refused (429, saying why) until the cool-off ends or an operator
# deletes its access attempts in the console (Axes > Access attempts).
# Content-Security-Policy (django-csp 4): scripts, styles, fonts and images
# from Codex's own origin only (the Swagger UI and the admin are served
# locally; the team pages keep their scripts in static files), nothing may
# frame a page, forms post only to Codex. /api/docs/ adds inline styles, which
# Swagger UI sets itself (codex/core/api/docs.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [CSP_SELF],
        "script-src": [CSP_SELF],
        "style-src": [CSP_SELF],
        "img-src": [CSP_SELF, "data:"],
        "font-src": [CSP_SELF],
        "connect-src": [CSP_SELF],
        "object-src": [CSP_NONE],
        "base-uri": [CSP_SELF],
        "form-action": [CSP_SELF],
        "frame-ancestors": [CSP_NONE],
    }
}
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("CODEX_LOGIN_FAILURE_LIMIT", 5, minimum=1)
_lockout_minutes = env_int("CODEX_LOGIN_LOCKOUT_MINUTES", 30, minimum=0)
# 0: locked until an operator unlocks.
AXES_COOLOFF_TIME = timedelta(minutes=_lockout_minutes) if _lockout_minutes else None
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# No start-up banner: every manage.py command would print it on stderr.
AXES_VERBOSE = False
# The client's address as the API throttles see it (CODEX_PROXY_COUNT).
AXES_CLIENT_IP_CALLABLE = "codex.core.api.throttles.client_address"
AXES_COOLOFF_MESSAGE = (
    "Too many failed sign-ins for this account from your address: it is locked "
    f"for {_lockout_minutes} minutes. An operator can unlock it sooner in the "
    "console."
)
AXES_PERMALOCK_MESSAGE = (
    "Too many failed sign-ins for this account from your address: it is locked "
    "until an operator unlocks it in the console."
)
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if env_bool("CODEX_BEHIND_TLS", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("CODEX_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_SSL_REDIRECT = env_bool("CODEX_SSL_REDIRECT", True)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("CODEX_HSTS_INCLUDE_SUBDOMAINS", True)
    # Preloading is a commitment of the whole domain: off unless asked for.
    SECURE_HSTS_PRELOAD = env_bool("CODEX_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        SILENCED_SYSTEM_CHECKS = ["security.W021"]

# /metrics and /healthz/workers: a scraper sends `Authorization: Bearer <this>`
# (blank: only operators signed in to the console may read them).
CODEX_METRICS_TOKEN = env_str("CODEX_METRICS_TOKEN", "")
if CODEX_METRICS_TOKEN and len(CODEX_METRICS_TOKEN) < 24:
    raise ImproperlyConfigured(
        "CODEX_METRICS_TOKEN must be at least 24 characters (a guessable token "
        "opens the installation's figures): python3 -c 'import secrets; "
        "print(secrets.token_urlsafe(32))'"
    )
