from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "codex.notifications"
    label = "notifications"

    def ready(self) -> None:
        from django_fsm.signals import post_transition

        from codex.notifications.announcements import announce_task_transition

        post_transition.connect(
            announce_task_transition, dispatch_uid="task_announcements"
        )
