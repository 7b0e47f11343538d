"""Codex's settings with the benchmark's extra URL (bench.urls): what the
intake figure's gunicorn runs. Nothing else differs."""

from codex.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
