from django.apps import AppConfig


class ChildrenConfig(AppConfig):
    name = "codex.children"
    label = "children"

    def ready(self) -> None:
        from django_fsm.signals import post_transition

        from codex.children.flow import on_fan_out_transition, on_task_transition
        from codex.children.models.fan_out import FanOut, record_transition_event
        from codex.tasks.models import Task

        post_transition.connect(
            record_transition_event, sender=FanOut, dispatch_uid="children_fanout_log"
        )
        post_transition.connect(
            on_fan_out_transition, sender=FanOut, dispatch_uid="children_carry_out"
        )
        post_transition.connect(
            on_task_transition, sender=Task, dispatch_uid="children_child_reports"
        )
