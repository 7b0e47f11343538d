from django.apps import AppConfig


class ChildrenConfig(AppConfig):
    name = "codex.children"
    label = "children"

    def ready(self) -> None:
        from django_fsm.signals import post_transition

        from codex.children.models.fan_out import FanOut, record_transition_event

        post_transition.connect(
            record_transition_event, sender=FanOut, dispatch_uid="children_fanout_log"
        )
