"""Spend caps beyond the task's own (docs/gates.md): a monthly cap per
repository (Repository.monthly_cap_usd, set in the console) and one for the
whole installation (CODEX_MONTHLY_CAP_USD). A month is the calendar month in
UTC; the spend is the agent runs' cost started in it. At a cap, a task's next
agent step waits at a spend gate with the reason (operators are notified with
every gate); the scheduled gate check lets it go on once the spend is under
the caps again (a cap raised, or a new month)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from django.conf import settings
from django.db.models import Q, Sum

from codex.fleet.models import AgentRun
from codex.repositories.models import Repository


def month_start(now: datetime | None = None) -> datetime:
    """The first instant of the current calendar month, UTC."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def installation_cap() -> Decimal | None:
    """CODEX_MONTHLY_CAP_USD, or None when it is 0 or unset (no cap)."""
    value = Decimal(str(getattr(settings, "CODEX_MONTHLY_CAP_USD", 0) or 0))
    return value if value > 0 else None


def _spent_this_month(**filters) -> Decimal:
    """The cost of this month's agent runs matching `filters`: asked only
    where a cap applies (every step checks, and most have none)."""
    runs = AgentRun.objects.filter(started_at__gte=month_start(), **filters)
    return runs.aggregate(total=Sum("cost_usd"))["total"] or Decimal(0)


def cap_reached(repository: Repository) -> str | None:
    """Why a new agent step on `repository` must wait, or None."""
    if repository.monthly_cap_usd is not None:
        spent = _spent_this_month(task__repository=repository)
        if spent >= repository.monthly_cap_usd:
            return (
                f"{repository.full_name} spent ${spent:.2f} of its monthly cap "
                f"${repository.monthly_cap_usd:.2f} this month; raise the cap in "
                "the console (Repositories) or wait for next month"
            )
    cap = installation_cap()
    if cap is not None:
        spent = _spent_this_month()
        if spent >= cap:
            return (
                f"the installation spent ${spent:.2f} of its monthly cap "
                f"${cap:.2f} this month; raise CODEX_MONTHLY_CAP_USD or wait "
                "for next month"
            )
    return None


@dataclass(frozen=True)
class CapLine:
    """One cap on the dashboard: whose, what was spent this month, the cap."""

    name: str
    spent: Decimal
    cap: Decimal

    @property
    def percent(self) -> float:
        return min(100.0, 100 * float(self.spent) / float(self.cap or 1))

    @property
    def reached(self) -> bool:
        return self.spent >= self.cap


def cap_lines(installation_spent: Decimal) -> list[CapLine]:
    """Spend against each cap, in one query (the repositories with a cap);
    the installation's month spend comes from the caller's aggregate."""
    since = month_start()
    lines = []
    cap = installation_cap()
    if cap is not None:
        lines.append(CapLine("installation", installation_spent, cap))
    capped = Repository.objects.filter(monthly_cap_usd__isnull=False).annotate(
        month_spent=Sum(
            "tasks__runs__cost_usd", filter=Q(tasks__runs__started_at__gte=since)
        )
    )
    for repository in capped:
        lines.append(
            CapLine(
                repository.full_name,
                repository.month_spent or Decimal(0),
                repository.monthly_cap_usd,
            )
        )
    return lines
