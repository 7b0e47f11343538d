from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "codex.tasks"
    label = "tasks"
    verbose_name = "Tasks"

    def ready(self) -> None:
        from django_fsm.signals import post_transition

        from codex.tasks.models.task import record_transition_event

        post_transition.connect(record_transition_event, dispatch_uid="task_event_log")
        # The console's Attention items register themselves on import.
        import codex.tasks.attention  # noqa: F401
