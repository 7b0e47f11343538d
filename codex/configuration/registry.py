"""The configuration keys Codex knows, with their types and defaults.

Every policy Codex applies reads its value through `get_config(key)` at the
moment it applies it (codex/configuration/config.py): a value saved in the
console takes effect at the next decision, with no restart. The README's
"Configuration keys" table lists them.

The first eight keys and their defaults
(docs/domain/configuration.md#configuration-keys)::

    ('github.token', 'encrypted_token_here', TRUE),
    ('editor.command', 'code', FALSE),
    ('worktrees.base_path', './worktrees', FALSE),
    ('terminal.theme', 'dark', FALSE),
    ('instances.cleanup_policy', 'manual', FALSE),
    ('review.max_iterations', '3', FALSE),
    ('review.auto_abandon_after', '5', FALSE),
    ('review.timeout_hours', '24', FALSE);

`github.token` and `anthropic.api_key` are encrypted and have no default (the
value listed is a placeholder); the keys after those eight are Codex's own
policies that used to be environment-only settings: each keeps its environment
variable (`env`), so a deployment's existing variables still apply.

Every number has the bounds its rule gives (docs/domain/configuration.md#
configuration-keys), and `why` says where they come from: a value outside is
refused, in the console too, with that reason. The review limits are bounded
by the constraint on instance relationships (docs/domain/fleet.md#review-loop):
"CHECK (review_iteration > 0 AND review_iteration <= 5)"; a review cycle is
one review iteration, so `review.max_cycles` is bounded by it too.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from codex.env import env_bool, env_int

ENV_PREFIX = "CODEX_"
MAX_REVIEW_ITERATIONS = 5  # docs/domain/fleet.md#review-loop
# The verification loop's reports are report-1 to report-3
# (docs/domain/tasks.md#feedback-loops): a third one requesting changes
# escalates.
MAX_VERIFICATION_CYCLES = 3
# A completion window longer than a week would hold a parent for ever.
WEEK_MINUTES = 7 * 24 * 60
REVIEW_BOUND = (
    "review iterations are 1 to 5 per coding instance (the instance "
    "relationships' CHECK), and a review cycle is one review iteration"
)


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
    env: str | None = None
    why: str = ""  # where the bounds come from, said when a value is refused

    @property
    def env_var(self) -> str:
        """The environment variable (and Django setting) of the key: `env` when
        given, else CODEX_ + the key uppercased with dots as underscores."""
        return self.env or ENV_PREFIX + self.key.upper().replace(".", "_")

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
            message = str(exc)
            if self.why and ("minimum" in message or "maximum" in message):
                message += f" ({self.why})"
            raise InvalidSettingValue(message) from None
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
            env="CODEX_WORKTREE_ROOT",
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
            why=REVIEW_BOUND,
        ),
        ConfigKey(
            "review.auto_abandon_after",
            ValueType.INTEGER,
            5,
            "Auto-abandon after this many failed reviews.",
            minimum=1,
            why="at least one failed review before abandoning",
        ),
        ConfigKey(
            "review.timeout_hours",
            ValueType.INTEGER,
            24,
            "Auto-terminate stuck reviews after this many hours.",
            minimum=1,
            why="a review gets at least an hour",
        ),
        # -- Codex's own policies (docs/domain/configuration.md#configuration-keys) --
        ConfigKey(
            "anthropic.api_key",
            ValueType.STRING,
            None,
            "Claude API key, used before any ANTHROPIC_API_KEY of the environment.",
            secret=True,
        ),
        ConfigKey(
            "verification.max_cycles",
            ValueType.INTEGER,
            3,
            "Verification reports that may request changes before a task escalates "
            "(taken by each new task).",
            minimum=1,
            maximum=MAX_VERIFICATION_CYCLES,
            why="the verification loop keeps report-1 to report-3: the third "
            "report that requests changes escalates",
        ),
        ConfigKey(
            "review.max_cycles",
            ValueType.INTEGER,
            2,
            "Review reports that may request changes before a task escalates "
            "(taken by each new task).",
            minimum=1,
            maximum=MAX_REVIEW_ITERATIONS,
            why=REVIEW_BOUND,
        ),
        ConfigKey(
            "tasks.max_retries",
            ValueType.INTEGER,
            5,
            "Transient failures (blocked) per phase before a task escalates.",
            minimum=0,
            env="CODEX_MAX_RETRIES",
            why="0 escalates at the first transient failure",
        ),
        ConfigKey(
            "tasks.stuck_after_minutes",
            ValueType.INTEGER,
            120,
            "Minutes in one phase after which a task counts as stuck.",
            minimum=1,
            env="CODEX_STUCK_AFTER_MINUTES",
            why="a phase gets at least a minute",
        ),
        ConfigKey(
            "children.window_minutes",
            ValueType.INTEGER,
            10,
            "Minutes a parent waits for its children's reports before the "
            "completion analysis runs on what arrived (docs/children.md).",
            minimum=1,
            maximum=WEEK_MINUTES,
            env="CODEX_CHILDREN_WINDOW_MINUTES",
            why="1 minute to a week",
        ),
        ConfigKey(
            "children.analysis_timeout_minutes",
            ValueType.INTEGER,
            8,
            "Minutes the model's completion analysis may take before the "
            "rules decide instead (docs/children.md).",
            minimum=1,
            maximum=24 * 60,
            env="CODEX_CHILDREN_ANALYSIS_TIMEOUT_MINUTES",
            why="1 minute to a day",
        ),
        ConfigKey(
            "children.child_timeout_minutes",
            ValueType.INTEGER,
            8,
            "Minutes a child may work without reporting before it is stopped "
            "and reported as timed out (docs/children.md).",
            minimum=1,
            maximum=WEEK_MINUTES,
            env="CODEX_CHILDREN_CHILD_TIMEOUT_MINUTES",
            why="1 minute to a week",
        ),
        ConfigKey(
            "children.consolidation_pr",
            ValueType.BOOLEAN,
            False,
            "When a parent's analysis merges two or more children: merge their "
            "branches into one consolidation pull request instead of merging "
            "each child's in order (docs/children.md).",
            env="CODEX_CHILDREN_CONSOLIDATION_PR",
        ),
        ConfigKey(
            "claims.ttl_minutes",
            ValueType.INTEGER,
            30,
            "An issue claim's time to live.",
            minimum=1,
            env="CODEX_CLAIM_TTL_MINUTES",
            why="a claim lives at least a minute",
        ),
        ConfigKey(
            "notify.channels",
            ValueType.STRING,
            "log",
            "Comma-separated channels every notification goes to: log, email, "
            "teams, slack, webhook.",
        ),
        ConfigKey(
            "notify.email.to",
            ValueType.STRING,
            None,
            "Comma-separated addresses of the email channel.",
        ),
        ConfigKey(
            "notify.teams.webhook_url",
            ValueType.STRING,
            None,
            "Microsoft Teams incoming webhook URL (the teams channel).",
            secret=True,
        ),
        ConfigKey(
            "notify.slack.webhook_url",
            ValueType.STRING,
            None,
            "Slack incoming webhook URL (the slack channel).",
            secret=True,
        ),
        ConfigKey(
            "notify.max_attempts",
            ValueType.INTEGER,
            5,
            "Delivery attempts of a notification before it is marked failed.",
            minimum=1,
            env="CODEX_NOTIFY_MAX_ATTEMPTS",
            why="a notification is tried at least once",
        ),
    )
}

# The eight keys of the user_config table Codex imports, in their order.
SPEC_004_KEYS = (
    "github.token",
    "editor.command",
    "worktrees.base_path",
    "terminal.theme",
    "instances.cleanup_policy",
    "review.max_iterations",
    "review.auto_abandon_after",
    "review.timeout_hours",
)


def config_key(key: str) -> ConfigKey:
    """The registry entry of `key`; UnknownSetting when there is none."""
    try:
        return KEYS[key]
    except KeyError:
        raise UnknownSetting(
            f"{key!r} is not a configuration key; known keys: {', '.join(KEYS)}"
        ) from None
