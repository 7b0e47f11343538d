"""Models of the configuration app: settings, and the caches of the forge."""

from codex.configuration.models.forge_cache import (
    GitHubIssue,
    GitHubIssueState,
    GitHubToken,
)
from codex.configuration.models.setting import Setting

__all__ = ["GitHubIssue", "GitHubIssueState", "GitHubToken", "Setting"]
