"""The operator console's site: its index ordered by daily work, an Attention
block above it, and lists without the navigation sidebar (so that their
columns fit a 1280-pixel screen).

Models are grouped by what an operator does with them, not by the Django app
that holds them: the daily work first, records and caches apart, the
configuration last. A model that no group names lands in "Other", before the
configuration, so a new model is never hidden.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from codex.core.attention import attention_items

# (group name, its anchor, the models in the order shown, as app_label.Model)
GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "Daily work",
        "daily-work",
        (
            "tasks.Task",
            "tasks.Escalation",
            "fleet.AgentRun",
            "repositories.Repository",
        ),
    ),
    (
        "Agents and claims",
        "agents",
        (
            "fleet.AgentInstance",
            "claims.IssueClaim",
            "claims.BacklogRun",
            "children.FanOut",
            "children.ChildReport",
            "children.CompletionAnalysis",
            "fleet.InstanceRelationship",
        ),
    ),
    (
        "Records",
        "records",
        (
            "events.Event",
            "notifications.Notification",
            "tasks.Artifact",
            "tasks.VerificationReport",
            "tasks.ReviewReport",
            "tasks.Triage",
            "tasks.Analysis",
            "tasks.BuildResult",
            "tasks.AgentQuestion",
            "tasks.Learning",
            "webhooks.WebhookDelivery",
        ),
    ),
    (
        "Forge mirrors and caches",
        "caches",
        (
            "repositories.LocalPullRequest",
            "repositories.LocalIssue",
            "github.GitHubIssue",
            "github.GitHubProject",
            "claims.BoardItem",
            "github.GitHubInstallation",
            "github.GitHubToken",
            "configuration.ActiveCredential",
        ),
    ),
    (
        "Worker queue",
        "worker-queue",
        ("django_q.OrmQ", "django_q.Failure", "django_q.Success"),
    ),
    (
        # django-axes: delete a locked-out attempt to unlock that sign-in.
        "Sign-in lockouts",
        "sign-ins",
        ("axes.AccessAttempt", "axes.AccessFailureLog", "axes.AccessLog"),
    ),
)
OTHER = ("Other", "other")
CONFIGURATION = (
    "Configuration",
    "configuration",
    (
        "configuration.Setting",
        "django_q.Schedule",
        "accounts.ApiToken",
        "auth.User",
        "auth.Group",
    ),
)


def group_models(apps: list[dict[str, Any]], index_url: str) -> list[dict[str, Any]]:
    """Django's per-app list regrouped by GROUPS; unnamed models go to Other."""
    by_name = {
        f"{app['app_label']}.{model['object_name']}": model
        for app in apps
        for model in app["models"]
    }
    placed: set[str] = set()

    def section(name: str, anchor: str, models: list[dict]) -> dict[str, Any]:
        return {
            "name": name,
            "app_label": anchor,
            "app_url": f"{index_url}#{anchor}",
            "has_module_perms": True,
            "models": models,
        }

    def take(names: tuple[str, ...]) -> list[dict]:
        found = [by_name[name] for name in names if name in by_name]
        placed.update(name for name in names if name in by_name)
        return found

    sections = [section(n, a, take(names)) for n, a, names in GROUPS]
    configuration = section(CONFIGURATION[0], CONFIGURATION[1], take(CONFIGURATION[2]))
    others = [model for name, model in by_name.items() if name not in placed]
    sections.append(section(*OTHER, sorted(others, key=lambda m: m["name"])))
    sections.append(configuration)
    return [entry for entry in sections if entry["models"]]


class CodexAdminSite(admin.AdminSite):
    """Django's admin site with the index described in this module."""

    site_header = "Codex console"
    site_title = "Codex"
    index_title = "Operator console"
    index_template = "admin/codex_index.html"
    # The sidebar takes a fifth of the width that wide lists need.
    enable_nav_sidebar = False

    def get_app_list(
        self, request: HttpRequest, app_label: str | None = None
    ) -> list[dict[str, Any]]:
        apps = super().get_app_list(request, app_label)
        if app_label is not None:
            return apps  # one app's own page keeps Django's layout
        return group_models(apps, reverse("admin:index", current_app=self.name))

    def index(
        self, request: HttpRequest, extra_context: dict | None = None
    ) -> HttpResponse:
        context = {"attention": attention_items(), **(extra_context or {})}
        return super().index(request, extra_context=context)


class CodexAdminConfig(AdminConfig):
    """django.contrib.admin with CodexAdminSite as admin.site."""

    default_site = "codex.core.admin_site.CodexAdminSite"
