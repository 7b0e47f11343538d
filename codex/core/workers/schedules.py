"""The scheduled jobs (docs/architecture.md#scheduled-jobs), as django-q2
schedules.

settings.CODEX_SCHEDULES maps a job's dotted path to its interval in minutes
(0 turns the job off). `seed_schedules` makes django-q2's Schedule table say the
same: one schedule per job, named after the job's path. It is called by the
data migration core.0002_seed_schedules and is safe to call again whenever the
settings change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# django-q2 stores `minutes` in a PositiveSmallIntegerField.
MAX_MINUTES = 32767
# django_q.models.Schedule.MINUTES; a migration's historical model has fields
# only, not the class's constants.
SCHEDULE_TYPE_MINUTES = "I"


def _schedule_model(schedule_model: Any | None) -> Any:
    """The model given (a migration's historical one) or django-q2's own."""
    if schedule_model is not None:
        return schedule_model
    from django_q.models import Schedule

    return Schedule


def seed_schedules(
    schedule_model: Any | None = None,
    schedules: Mapping[str, int] | None = None,
) -> None:
    """Create or update one every-N-minutes Schedule per job of `schedules`
    (default settings.CODEX_SCHEDULES); an interval of 0 deletes the job's
    schedule.

    Idempotent: schedules are found by name, so seeding twice creates no
    duplicates (django-q2's schedule() would raise on an existing name instead).
    An existing schedule keeps its next run, so re-seeding never postpones a job.
    """
    model = _schedule_model(schedule_model)
    wanted = settings.CODEX_SCHEDULES if schedules is None else schedules
    for func, minutes in wanted.items():
        existing = model.objects.filter(name=func).order_by("pk")
        if minutes <= 0:
            existing.delete()
            continue
        if minutes > MAX_MINUTES:
            raise ImproperlyConfigured(
                f"the interval of {func} is {minutes} minutes; django-q2 allows "
                f"at most {MAX_MINUTES}"
            )
        first = existing.first()
        if first is not None:
            # The name column is not unique: drop copies someone made by hand.
            existing.exclude(pk=first.pk).delete()
        model.objects.update_or_create(
            name=func,
            defaults={
                "func": func,
                "schedule_type": SCHEDULE_TYPE_MINUTES,
                "minutes": minutes,
                "repeats": -1,
            },
        )


def unseed_schedules(
    schedule_model: Any | None = None,
    schedules: Mapping[str, int] | None = None,
) -> None:
    """Delete the schedules `seed_schedules` manages (the migration's reverse)."""
    model = _schedule_model(schedule_model)
    wanted = settings.CODEX_SCHEDULES if schedules is None else schedules
    model.objects.filter(name__in=list(wanted)).delete()
