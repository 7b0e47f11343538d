from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "codex.accounts"
    label = "accounts"
    verbose_name = "Accounts and API tokens"

    def ready(self) -> None:
        # The API document's description of the token scheme.
        import codex.accounts.schema  # noqa: F401
