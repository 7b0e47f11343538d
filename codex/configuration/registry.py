"""The configuration keys Codex knows, with their types and defaults (spec 004).

Spec 004 "Database-Stored Configuration" lists the keys and their defaults::

    ('github.token', 'encrypted_token_here', TRUE),
    ('editor.command', 'code', FALSE),
    ('worktrees.base_path', './worktrees', FALSE),
    ('terminal.theme', 'dark', FALSE),
    ('instances.cleanup_policy', 'manual', FALSE),
    ('review.max_iterations', '3', FALSE),
    ('review.auto_abandon_after', '5', FALSE),
    ('review.timeout_hours', '24', FALSE);

`github.token` is the one encrypted key and has no default (the spec's value is
a placeholder). The review limits are bounded by the spec's own constraint on
instance relationships: "CHECK (review_iteration > 0 AND review_iteration <= 5)".
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from codex.env import env_bool, env_int

ENV_PREFIX = "CODEX_"
MAX_REVIEW_ITERATIONS = 5  # spec 004: "Max 5 review iterations"


class ValueType(enum.StrEnum):
    """How a stored or environment string becomes a Python value."""

    STRING = "string"
    INTEGER = "integer"
    BOOLEAN = "boolean"


class UnknownSetting(KeyError):
    """The key is not in the registry."""


class InvalidSettingValue(ImproperlyConfigured):
    """A value (from the environment or the database) does not parse."""


@dataclass(frozen=True)
class ConfigKey:
    """One configuration key: its type, default, bounds and whether it is secret."""

    key: str
    type: ValueType
    default: Any
    description: str
    secret: bool = False
    minimum: int | None = None
    maximum: int | None = None

    @property
    def env_var(self) -> str:
        """CODEX_ + the key uppercased with dots as underscores."""
        return ENV_PREFIX + self.key.upper().replace(".", "_")

    def parse(self, raw: str, *, origin: str) -> Any:
        """The typed value of `raw`; InvalidSettingValue names `origin` on error."""
        name = f"{self.key} (from {origin})"
        try:
            if self.type is ValueType.INTEGER:
                if not raw.strip():
                    raise ImproperlyConfigured(f"{name}='' is not an integer")
                return env_int(
                    name,
                    0,
                    minimum=self.minimum,
                    maximum=self.maximum,
                    environ={name: raw},
                )
            if self.type is ValueType.BOOLEAN:
                return env_bool(name, False, environ={name: raw})
        except ImproperlyConfigured as exc:
            raise InvalidSettingValue(str(exc)) from None
        if not raw.strip():
            raise InvalidSettingValue(f"{name} cannot be blank")
        return raw if self.secret else raw.strip()

    def serialize(self, value: Any) -> str:
        """The text form stored in the database (validated by parsing it back)."""
        raw = str(value).lower() if isinstance(value, bool) else str(value)
        self.parse(raw, origin="the new value")
        return raw


KEYS: dict[str, ConfigKey] = {
    item.key: item
    for item in (
        ConfigKey(
            "github.token",
            ValueType.STRING,
            None,
            "GitHub token used when no GitHub App is configured.",
            secret=True,
        ),
        ConfigKey(
            "editor.command",
            ValueType.STRING,
            "code",
            "Command that opens a worktree in an editor.",
        ),
        ConfigKey(
            "worktrees.base_path",
            ValueType.STRING,
            "./worktrees",
            "Folder under which agent worktrees are created.",
        ),
        ConfigKey("terminal.theme", ValueType.STRING, "dark", "Terminal theme."),
        ConfigKey(
            "instances.cleanup_policy",
            ValueType.STRING,
            "manual",
            "What happens to finished agent instances' worktrees.",
        ),
        ConfigKey(
            "review.max_iterations",
            ValueType.INTEGER,
            3,
            "Maximum review loops per coding agent.",
            minimum=1,
            maximum=MAX_REVIEW_ITERATIONS,
        ),
        ConfigKey(
            "review.auto_abandon_after",
            ValueType.INTEGER,
            5,
            "Auto-abandon after this many failed reviews.",
            minimum=1,
        ),
        ConfigKey(
            "review.timeout_hours",
            ValueType.INTEGER,
            24,
            "Auto-terminate stuck reviews after this many hours.",
            minimum=1,
        ),
    )
}


def config_key(key: str) -> ConfigKey:
    """The registry entry of `key`; UnknownSetting when there is none."""
    try:
        return KEYS[key]
    except KeyError:
        raise UnknownSetting(
            f"{key!r} is not a configuration key; known keys: {', '.join(KEYS)}"
        ) from None
