"""`installation` / `installation_repositories`: where the GitHub App is installed."""

from __future__ import annotations

from django.db import transaction

from codex.events.models import Event, EventKind
from codex.github.models import GitHubInstallation
from codex.webhooks.handlers.common import Context, Result, ignored, obj, processed


def _full_names(repositories) -> list[str]:
    return [
        str(repo["full_name"])
        for repo in repositories or []
        if isinstance(repo, dict) and repo.get("full_name")
    ]


def handle(context: Context) -> Result:
    """Keep the installation's id, account, state and repositories, and log it."""
    installation = obj(context.payload.get("installation"))
    installation_id = installation.get("id")
    if not isinstance(installation_id, int):
        return ignored("no installation id")
    account = obj(installation.get("account"))
    action = context.action
    with transaction.atomic():
        record, _ = GitHubInstallation.objects.select_for_update().get_or_create(
            installation_id=installation_id
        )
        record.account_login = str(account.get("login") or record.account_login)
        record.account_type = str(account.get("type") or record.account_type)
        if isinstance(installation.get("app_id"), int):
            record.app_id = installation["app_id"]
        if context.delivery.event == "installation":
            if action in ("created", "new_permissions_accepted", "unsuspend"):
                record.suspended = False
                record.deleted = False
            elif action == "suspend":
                record.suspended = True
            elif action == "deleted":
                record.deleted = True
            if "repositories" in context.payload:
                record.repositories = _full_names(context.payload["repositories"])
        else:
            names = [str(name) for name in record.repositories]
            removed = set(_full_names(context.payload.get("repositories_removed")))
            added = _full_names(context.payload.get("repositories_added"))
            names = [name for name in names if name not in removed]
            names += [name for name in added if name not in names]
            record.repositories = names
        record.last_action = action
        record.save()
        Event.log(
            EventKind.WEBHOOK,
            actor=context.actor,
            reason=f"{context.delivery.event}.{action} for installation "
            f"{installation_id} ({record.account_login})",
            subject=f"installation:{installation_id}",
            data={
                "delivery": context.delivery.delivery_id,
                "installation_id": installation_id,
                "repositories": record.repositories,
            },
        )
    return processed(f"installation {installation_id}: {action}")
