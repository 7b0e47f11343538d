"""Paths, the run mode, Django's wiring (the installed apps, middleware,
templates, static files) and logging."""

from __future__ import annotations

import sys
from pathlib import Path

from codex.env import env_bool, env_str

# The repository's root: codex/settings/base.py is three levels down.
BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("CODEX_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
TESTING = "pytest" in sys.modules or env_bool("CODEX_TESTING", False)

INSTALLED_APPS = [
    # django.contrib.admin with the console's own site (codex.core.admin_site).
    "codex.core.admin_site.CodexAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_fsm",
    "django_q",
    # Sign-in lockout: attempts in the database, unlocked in the console.
    "axes",
    "csp",
    "codex.core",
    "codex.accounts",
    "codex.repositories",
    "codex.events",
    "codex.tasks",
    "codex.claims",
    "codex.fleet",
    "codex.children",
    "codex.configuration",
    "codex.github",
    "codex.notifications",
    "codex.webhooks",
    # /metrics and /healthz/workers (no models): reads every app above.
    "codex.monitoring",
    # The agents' own commands (`manage.py demo`); they have no models.
    "agents",
]

MIDDLEWARE = [
    # The health and metrics probes, before the host check (they come by IP).
    "codex.core.middleware.ProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every response (CONTENT_SECURITY_POLICY, security.py).
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # A NUL in a path or query string is a 400 here, not a 500 in PostgreSQL.
    "codex.core.middleware.RefuseNulMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A view that loses the database answers 503 with Retry-After, not 500.
    "codex.core.database.DatabaseUnavailableMiddleware",
    # Last, as django-axes asks: answers a locked-out sign-in with its message.
    "axes.middleware.AxesMiddleware",
]

# The probes ProbeMiddleware answers whatever the Host header says: path → view.
# /healthz is open; the others need the metrics token (codex.monitoring).
CODEX_PROBE_VIEWS = {
    "/healthz": "codex.core.views.healthz",
    "/metrics": "codex.monitoring.views.metrics",
    "/healthz/workers": "codex.monitoring.views.workers",
}

ROOT_URLCONF = "codex.urls"
WSGI_APPLICATION = "codex.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "codex.accounts.context_processors.roles",
            ],
        },
    },
]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("CODEX_STATIC_ROOT", str(VAR_DIR / "static")))
# Files served at the site's root (/favicon.ico) by WhiteNoise, without a view.
WHITENOISE_ROOT = BASE_DIR / "codex" / "core" / "root_files"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG or TESTING
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("CODEX_LOG_LEVEL", "INFO")},
    "loggers": {
        "django_q": {"level": env_str("CODEX_Q_LOG_LEVEL", "INFO")},
        # One INFO line per model request is noise; errors still show.
        "httpx2": {"level": "WARNING"},
    },
}
