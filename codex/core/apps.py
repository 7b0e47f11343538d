from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "codex.core"
    label = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        from django_fsm.signals import post_transition

        from codex.core.logged_state import record_transition_event

        post_transition.connect(
            record_transition_event, dispatch_uid="logged_state_event_log"
        )
