from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "codex.accounts"
    label = "accounts"
    verbose_name = "Accounts and API tokens"
