"""The scheduled jobs of DESIGN.md §"How work moves" 4, seeded into django-q2
from settings.CODEX_SCHEDULES (job path → minutes, 0 = off)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils.module_loading import import_string
from django_q.models import Schedule

from codex.core.workers.schedules import seed_schedules, unseed_schedules

pytestmark = pytest.mark.django_db

RECOVERY = "codex.tasks.recovery.recover_stuck_tasks"
HEARTBEATS = "codex.fleet.heartbeats.reap_stale_work"
PRUNING = "codex.events.jobs.prune_old_events"


def seeded() -> dict[str, tuple[str, str, int, int]]:
    return {
        s.name: (s.func, s.schedule_type, s.minutes, s.repeats)
        for s in Schedule.objects.all()
    }


def test_after_migrating_every_enabled_job_has_its_schedule(settings):
    expected = {
        func: (func, Schedule.MINUTES, minutes, -1)
        for func, minutes in settings.CODEX_SCHEDULES.items()
        if minutes > 0
    }
    assert expected, "CODEX_SCHEDULES enables no job"
    assert {name: seeded()[name] for name in expected} == expected
    # Spec 002 §3.6's scan every 10 minutes, heartbeats every 2, pruning daily.
    assert (
        settings.CODEX_SCHEDULES[RECOVERY]
        == Schedule.objects.get(name=RECOVERY).minutes
    )


def test_the_default_intervals():
    """codex.settings defaults (no CODEX_EVERY_* variables set in tests)."""
    assert Schedule.objects.get(name=RECOVERY).minutes == 10
    assert Schedule.objects.get(name=HEARTBEATS).minutes == 2
    assert Schedule.objects.get(name=PRUNING).minutes == 1440


@pytest.mark.parametrize("path", [RECOVERY, HEARTBEATS, PRUNING])
def test_the_jobs_built_here_are_importable(path):
    assert callable(import_string(path))


def test_seeding_twice_creates_no_duplicates_and_keeps_the_next_run():
    seed_schedules()
    before = {s.name: (s.pk, s.next_run) for s in Schedule.objects.all()}
    seed_schedules()
    after = {s.name: (s.pk, s.next_run) for s in Schedule.objects.all()}
    assert after == before
    assert Schedule.objects.count() == len(before)


def test_an_interval_of_0_removes_that_schedule(settings):
    settings.CODEX_SCHEDULES = {**settings.CODEX_SCHEDULES, PRUNING: 0}
    others = Schedule.objects.exclude(name=PRUNING).count()

    seed_schedules()

    assert not Schedule.objects.filter(name=PRUNING).exists()
    assert Schedule.objects.count() == others
    seed_schedules()  # and stays removed
    assert not Schedule.objects.filter(name=PRUNING).exists()


def test_a_changed_interval_updates_the_schedule(settings):
    settings.CODEX_SCHEDULES = {**settings.CODEX_SCHEDULES, RECOVERY: 15}
    seed_schedules()
    assert Schedule.objects.get(name=RECOVERY).minutes == 15


def test_a_job_turned_back_on_gets_its_schedule_again(settings):
    seed_schedules(schedules={PRUNING: 0})
    seed_schedules(schedules={PRUNING: 60})
    assert seeded()[PRUNING] == (PRUNING, Schedule.MINUTES, 60, -1)


def test_hand_made_copies_of_a_schedule_collapse_to_one():
    Schedule.objects.create(name=HEARTBEATS, func=HEARTBEATS, minutes=99)
    seed_schedules()
    assert Schedule.objects.filter(name=HEARTBEATS).count() == 1
    assert Schedule.objects.get(name=HEARTBEATS).minutes == 2


def test_unseeding_removes_only_the_configured_jobs():
    Schedule.objects.create(name="someone.elses.job", func="someone.elses.job")
    unseed_schedules()
    assert list(Schedule.objects.values_list("name", flat=True)) == [
        "someone.elses.job"
    ]


def test_the_migration_works_with_the_historical_model():
    """A migration's model has fields but not django-q2's class constants."""
    Schedule.objects.all().delete()
    state = MigrationExecutor(connection).loader.project_state(
        ("core", "0002_seed_schedules")
    )
    historical = state.apps.get_model("django_q", "Schedule")

    seed_schedules(historical)

    assert seeded()[RECOVERY] == (RECOVERY, Schedule.MINUTES, 10, -1)
