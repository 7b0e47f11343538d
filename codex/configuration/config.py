"""Reading configuration: the database, then the environment, then the default.

Every policy reads its value here when it applies it (not at import), so a
value an operator saves in the console takes effect at the next decision.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from codex.configuration.models import Setting
from codex.configuration.registry import config_key

_UNSET = object()


def get_config(key: str, *, environ: Mapping[str, str] | None = None) -> Any:
    """The typed value of configuration `key`.

    Precedence: the database row (saved in the console or the API), then the
    environment, then the registry default. The environment is the Django
    setting named like the variable (codex.settings reads it from the process
    environment at start-up), else the variable itself (CODEX_<KEY>, dots as
    underscores, e.g. CODEX_REVIEW_MAX_ITERATIONS; some keys keep an older
    name, see the registry); `environ`, when given, replaces both. So the
    environment is a deployment's default and the console has the last word.

    Raises UnknownSetting for a key not in the registry and InvalidSettingValue,
    naming where the value came from, for one that does not parse.
    """
    entry = config_key(key)
    setting = stored_setting(key)
    if setting is not None:
        return entry.parse(setting.plaintext(), origin="the database")
    raw = _environment_value(entry.env_var, environ)
    if raw is not None:
        return entry.parse(raw, origin=f"environment variable {entry.env_var}")
    return entry.default


def stored_setting(key: str) -> Setting | None:
    """The database row of `key`, if saved."""
    return Setting.objects.stored(key)


def _environment_value(name: str, environ: Mapping[str, str] | None) -> str | None:
    if environ is not None:
        return environ.get(name)
    value = getattr(settings, name, _UNSET)
    if value is _UNSET:
        return os.environ.get(name)
    if value is None or value == "":
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


def config_source(key: str) -> str:
    """Where the value of `key` now comes from: "database", "environment" or
    "default" (for the console's "In effect" column)."""
    entry = config_key(key)
    if Setting.objects.filter(key=key).exists():
        return "database"
    if _environment_value(entry.env_var, None) is not None:
        return "environment"
    return "default"
