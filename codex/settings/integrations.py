"""Outside systems: notifications, GitHub, git, and the credentials of
outside services."""

from __future__ import annotations

from codex.env import env_bool, env_int, env_list, env_str
from codex.settings.base import VAR_DIR

CODEX_NOTIFY_MAX_ATTEMPTS = env_int("CODEX_NOTIFY_MAX_ATTEMPTS", 5, minimum=1)
# Empty: each notification goes through its channel's sender
# (integrations.notify.senders.CHANNEL_SENDERS); a dotted class path here
# carries every channel instead (development, tests).
CODEX_NOTIFY_SENDER = env_str("CODEX_NOTIFY_SENDER", "")
CODEX_NOTIFY_WEBHOOK_URL = env_str("CODEX_NOTIFY_WEBHOOK_URL", "") or None
CODEX_NOTIFY_WEBHOOK_TIMEOUT = env_int("CODEX_NOTIFY_WEBHOOK_TIMEOUT", 10, minimum=1)
CODEX_NOTIFY_EMAIL_FROM = env_str("CODEX_NOTIFY_EMAIL_FROM", "") or None
# GitHub (docs/architecture.md#integrations). GITHUB_TOKEN is under
# CODEX_CREDENTIALS below.
GITHUB_APP_ID = env_str("GITHUB_APP_ID", "")
GITHUB_APP_PRIVATE_KEY = env_str("GITHUB_APP_PRIVATE_KEY", "")
GITHUB_APP_INSTALLATION_ID = env_str("GITHUB_APP_INSTALLATION_ID", "")
GITHUB_BASE_URL = env_str("GITHUB_BASE_URL", "https://api.github.com")
GITHUB_WEBHOOK_SECRET = env_str("GITHUB_WEBHOOK_SECRET", "")
CODEX_WEBHOOK_MAX_BYTES = env_int("CODEX_WEBHOOK_MAX_BYTES", 5_000_000, minimum=1000)
CODEX_TRIGGER_LABEL = env_str("CODEX_TRIGGER_LABEL", "codex")
CODEX_WEBHOOK_REPLY_TO_NON_WRITERS = env_bool(
    "CODEX_WEBHOOK_REPLY_TO_NON_WRITERS", True
)
CODEX_WEBHOOK_RETENTION_DAYS = env_int("CODEX_WEBHOOK_RETENTION_DAYS", 30, minimum=1)
CODEX_BOT_LOGIN = env_str("CODEX_BOT_LOGIN", "codex[bot]")
# PyGithub's pacing between requests and writes (GitHub's abuse rules), and its
# read-retry backoff factor.
CODEX_GITHUB_SECONDS_BETWEEN_REQUESTS = 0.25
CODEX_GITHUB_SECONDS_BETWEEN_WRITES = 1.0
CODEX_GITHUB_RETRY_BACKOFF = 0.5
CODEX_GIT_TIMEOUT_SECONDS = env_int("CODEX_GIT_TIMEOUT_SECONDS", 300, minimum=5)
# A transfer over HTTP(S) moving under 1 KB/s for this long is abandoned by git
# itself: it also stops a git whose worker was killed, which no timeout of
# Codex's reaches any more.
CODEX_GIT_STALL_SECONDS = env_int("CODEX_GIT_STALL_SECONDS", 60, minimum=1)
CODEX_MIRROR_ROOT = env_str("CODEX_MIRROR_ROOT", str(VAR_DIR / "mirrors"))
CODEX_GIT_AUTHOR_NAME = env_str("CODEX_GIT_AUTHOR_NAME", "Codex")
CODEX_GIT_AUTHOR_EMAIL = env_str("CODEX_GIT_AUTHOR_EMAIL", "codex@localhost")

# Credentials of outside services; several may be given (comma-separated) so
# that a rejected one is rotated out (rotate_token,
# docs/domain/concurrency.md#error-classification).
CODEX_CREDENTIALS = {
    "github": env_list("GITHUB_TOKEN", []),
    "claude": env_list("ANTHROPIC_API_KEY", []),
}
