"""Seed django-q2's schedules from settings.CODEX_SCHEDULES."""

from django.db import migrations

from codex.core.workers.schedules import seed_schedules, unseed_schedules


def seed(apps, schema_editor) -> None:
    """Create one schedule per configured job (codex.core.workers.schedules)."""
    seed_schedules(apps.get_model("django_q", "Schedule"))


def unseed(apps, schema_editor) -> None:
    """Remove the schedules `seed` created."""
    unseed_schedules(apps.get_model("django_q", "Schedule"))


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_side_effects"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(seed, unseed)]
