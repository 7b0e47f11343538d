from django.apps import AppConfig


class RepositoriesConfig(AppConfig):
    name = "codex.repositories"
    label = "repositories"
    verbose_name = "Repositories"

    def ready(self) -> None:
        from codex.repositories.worktree_quota import worktree_quota_mb
        from integrations.jail import register_quota_lookup

        # The jail holds each worktree to its repository's disk quota.
        register_quota_lookup(worktree_quota_mb)
