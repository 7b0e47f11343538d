from django.apps import AppConfig


class ChildrenConfig(AppConfig):
    name = "codex.children"
    label = "children"

    def ready(self) -> None:
        from django_fsm.signals import post_transition

        from codex.children.flow import on_fan_out_transition
        from codex.children.models.fan_out import FanOut, record_transition_event

        post_transition.connect(
            record_transition_event, sender=FanOut, dispatch_uid="children_fanout_log"
        )
        post_transition.connect(
            on_fan_out_transition, sender=FanOut, dispatch_uid="children_carry_out"
        )
        # A child task's transitions reach its parent through the tasks app,
        # which connects codex.children.flow.on_task_transition to its Task
        # (the children app imports no app above it).
