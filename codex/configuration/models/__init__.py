"""Models of the configuration app: settings, and the caches of the forge."""

from codex.configuration.models.credential import ActiveCredential
from codex.configuration.models.forge_cache import (
    GitHubIssue,
    GitHubIssueState,
    GitHubToken,
)
from codex.configuration.models.setting import Setting

__all__ = [
    "ActiveCredential",
    "GitHubIssue",
    "GitHubIssueState",
    "GitHubToken",
    "Setting",
]
