from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "codex.tasks"
    label = "tasks"
    verbose_name = "Tasks"

    def ready(self) -> None:
        from django_fsm.signals import post_transition

        from codex.tasks.announcements import announce_task_transition
        from codex.tasks.models.transition_log import record_transition_event

        post_transition.connect(record_transition_event, dispatch_uid="task_event_log")
        # An escalation, a release or a failure is announced on the channels.
        post_transition.connect(
            announce_task_transition, dispatch_uid="task_announcements"
        )
        # The console's Attention items register themselves on import.
        import codex.tasks.attention  # noqa: F401
        from codex.core.workers import on_dead_worker, on_given_up_job, on_warm_up
        from codex.tasks import dead_workers

        on_warm_up(warm_up_steps)
        # What a dead worker held, and a step given up, are the tasks app's to
        # free and record (docs/architecture.md#layers: the core names no app).
        on_dead_worker(dead_workers.release_dead_worker)
        on_given_up_job(dead_workers.give_up_job)
        self._answer_the_apps_below()

    def _answer_the_apps_below(self) -> None:
        """What the apps below the pipeline ask of tasks, registered with them
        so that none imports this app (docs/architecture.md#layer-debts)."""
        from django_fsm.signals import post_transition

        from codex.children.flow import on_task_transition
        from codex.children.hooks import register_task_creation
        from codex.events.jobs import register_finished_task_statuses
        from codex.fleet import hooks as fleet
        from codex.repositories.jobs import after_github_sync
        from codex.tasks import fleet_hooks
        from codex.tasks.ci_results import refresh_ci_results
        from codex.tasks.models import TERMINAL_STATUSES, Task

        # A parent's children are tasks; a child that reaches release or
        # stops reports to its parent.
        register_task_creation(Task.objects.create_from_request)
        post_transition.connect(
            on_task_transition, sender=Task, dispatch_uid="children_child_reports"
        )
        # The event log prunes the old events of finished tasks only.
        register_finished_task_statuses(TERMINAL_STATUSES)
        # What becomes of the tasks of the runs and instances the fleet's jobs
        # reap and limit.
        fleet.register_finished_task_statuses(TERMINAL_STATUSES)
        fleet.on_reaped_run(fleet_hooks.requeue_reaped)
        fleet.on_live_worktrees(fleet_hooks.task_worktrees)
        fleet.on_abandoned_work(fleet_hooks.escalate_abandoned)
        # Each GitHub sync also reads the CI results a webhook may have missed.
        after_github_sync("ci", refresh_ci_results)


def warm_up_steps() -> None:
    """Import what a worker's first step would (the step job and the phase
    runner), in a cluster's sentinel before it forks its workers."""
    from django.conf import settings
    from django.utils.module_loading import import_string

    import codex.tasks.jobs  # noqa: F401

    import_string(settings.CODEX_PHASE_RUNNER)
