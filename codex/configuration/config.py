"""Reading configuration: environment, then database, then the registry default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from codex.configuration.models import Setting
from codex.configuration.registry import config_key


def get_config(key: str, *, environ: Mapping[str, str] | None = None) -> Any:
    """The typed value of configuration `key`.

    Precedence: the environment variable CODEX_<KEY> (dots as underscores, e.g.
    CODEX_REVIEW_MAX_ITERATIONS), then the database row, then the default.
    An environment override wins so that a deployment can pin a value an
    operator cannot change in the console. Raises UnknownSetting for a key not
    in the registry and InvalidSettingValue, naming where the value came from,
    for one that does not parse.
    """
    entry = config_key(key)
    raw = (os.environ if environ is None else environ).get(entry.env_var)
    if raw is not None:
        return entry.parse(raw, origin=f"environment variable {entry.env_var}")
    setting = Setting.objects.filter(key=key).first()
    if setting is not None:
        return entry.parse(setting.plaintext(), origin="the database")
    return entry.default
