"""What Codex keeps of GitHub: the issue and token caches, the Projects board's
ids and the App's installations (docs/architecture.md#apps)."""

from django.apps import AppConfig


class GitHubConfig(AppConfig):
    """App config for `codex.github` (label "github")."""

    name = "codex.github"
    label = "github"
    verbose_name = "GitHub"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Give the GitHub client its token source (codex.github.tokens), and
        have `rotate_secrets` re-encrypt the cached tokens."""
        from codex.configuration.crypto import register_encrypted
        from codex.github.models import GitHubToken
        from codex.github.tokens import CodexTokens
        from integrations.github.tokens import use_token_source

        use_token_source(CodexTokens())
        register_encrypted("cached token(s)", GitHubToken.reencrypt_all)
