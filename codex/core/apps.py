from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CoreConfig(AppConfig):
    name = "codex.core"
    label = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        from django.core import checks
        from django_fsm.signals import post_transition
        from django_q.signals import pre_execute

        from codex.core.store.django_internals import (
            check_django_internals,
            check_event_log_registered,
        )
        from codex.core.store.logged_state import record_transition_event
        from codex.core.workers.job_results import leave_success_unsaved

        # Refuse to start when a Django internal the fast path relies on
        # changed (docs/architecture.md#fast-path), or without an event log.
        checks.register(check_django_internals)
        checks.register(check_event_log_registered)

        post_transition.connect(
            record_transition_event, dispatch_uid="logged_state_event_log"
        )
        pre_execute.connect(
            leave_success_unsaved, dispatch_uid="codex_leave_success_unsaved"
        )
        # Schedules follow the CODEX_EVERY_* settings on every migrate, not
        # only on the migration that first created them.
        post_migrate.connect(
            _seed_schedules, sender=self, dispatch_uid="codex_seed_schedules"
        )


def _seed_schedules(**kwargs) -> None:
    from codex.core.workers.schedules import seed_schedules

    seed_schedules()
