"""The operator console's view of what Codex keeps of GitHub: the cached
issues and token (read-only; a token is only ever shown masked) and the App's
installations. The Projects boards, shown with their items, are the claims
app's pages (codex.claims.admin)."""

from __future__ import annotations

from django.contrib import admin

from codex.github.models import (
    GitHubInstallation,
    GitHubIssue,
    GitHubToken,
)


@admin.register(GitHubIssue)
class GitHubIssueAdmin(admin.ModelAdmin):
    list_display = [
        "number",
        "title",
        "repository",
        "state",
        "assignee",
        "labels",
        "updated_at",
        "synced_at",
    ]
    list_filter = ["state"]
    list_select_related = ["repository"]
    search_fields = ["title", "=number", "assignee"]
    show_full_result_count = False
    date_hierarchy = "updated_at"
    readonly_fields = [
        "repository",
        "number",
        "title",
        "body",
        "state",
        "assignee",
        "labels",
        "created_at",
        "updated_at",
        "closed_at",
        "synced_at",
    ]

    def has_add_permission(self, request) -> bool:
        return False  # filled by the GitHub sync and webhooks only


@admin.register(GitHubToken)
class GitHubTokenAdmin(admin.ModelAdmin):
    """View the cached tokens masked; deleting one forces a refresh."""

    list_display = [
        "name",
        "masked_token",
        "expires_at",
        "refreshed_at",
        "lease_holder",
        "lease_expires_at",
    ]
    search_fields = ["name"]
    show_full_result_count = False
    fields = [
        "name",
        "masked_token",
        "expires_at",
        "refreshed_at",
        "version",
        "lease_holder",
        "lease_expires_at",
        "updated_at",
    ]
    readonly_fields = fields

    @admin.display(description="Token")
    def masked_token(self, obj: GitHubToken) -> str:
        return obj.masked_token

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(GitHubInstallation)
class GitHubInstallationAdmin(admin.ModelAdmin):
    """GitHub App installations, as the installation webhooks reported them."""

    list_display = [
        "installation_id",
        "account_login",
        "account_type",
        "suspended",
        "deleted",
        "last_action",
        "updated_at",
    ]
    list_filter = ["suspended", "deleted"]
    search_fields = ["account_login", "installation_id"]
    readonly_fields = [
        "installation_id",
        "account_login",
        "account_type",
        "app_id",
        "repositories",
        "suspended",
        "deleted",
        "last_action",
        "updated_at",
    ]

    def has_add_permission(self, request) -> bool:
        return False
