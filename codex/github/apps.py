"""What Codex keeps of GitHub: the issue and token caches, the Projects board's
ids and the App's installations (docs/architecture.md#apps)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

if TYPE_CHECKING:
    from codex.repositories.models import Repository


class GitHubConfig(AppConfig):
    """App config for `codex.github` (label "github")."""

    name = "codex.github"
    label = "github"
    verbose_name = "GitHub"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Give the GitHub client its token source (codex.github.tokens),
        have `rotate_secrets` re-encrypt the cached tokens, and have the
        scheduled GitHub sync (codex.repositories.jobs) sync with this app."""
        from codex.configuration.crypto import register_encrypted
        from codex.github.models import GitHubToken
        from codex.github.tokens import CodexTokens
        from codex.repositories.jobs import register_github_sync
        from integrations.github.tokens import use_token_source

        use_token_source(CodexTokens())
        register_encrypted("cached token(s)", GitHubToken.reencrypt_all)
        register_github_sync(sync_repository)


def sync_repository(repository: Repository) -> dict[str, Any]:
    """codex.github.sync.sync_repository, imported at the first sync so that
    starting a process that only needs the local forge never imports
    PyGithub."""
    from codex.github.sync import sync_repository

    return sync_repository(repository)
