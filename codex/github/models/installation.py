"""Where the GitHub App is installed, as its installation webhooks report it."""

from __future__ import annotations

from django.db import models


class GitHubInstallation(models.Model):
    """A GitHub App installation, as the installation webhooks report it: its id
    (what installation tokens are requested for), the account, whether it is
    suspended or deleted, and the repositories it was last said to cover."""

    installation_id = models.BigIntegerField(unique=True)
    account_login = models.CharField(max_length=200, blank=True)
    account_type = models.CharField(max_length=40, blank=True)
    app_id = models.BigIntegerField(null=True, blank=True)
    repositories = models.JSONField(
        default=list, blank=True, help_text="full names, e.g. acme/web"
    )
    suspended = models.BooleanField(default=False)
    deleted = models.BooleanField(default=False)
    last_action = models.CharField(max_length=60, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # The table made by the webhooks app, where the model began.
        db_table = "webhooks_githubinstallation"
        ordering = ["account_login", "installation_id"]
        verbose_name = "GitHub installation"

    def __str__(self) -> str:
        return f"installation {self.installation_id} ({self.account_login})"
