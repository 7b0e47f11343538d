"""Tasks waiting at a gate become `escalated` with the gate's own escalation
(docs/gates.md): the status `awaiting_approval` is gone.

Forward: every task in `awaiting_approval` becomes `escalated`; its open gate
gets an open escalation of its kind (plan_approval, merge_approval,
spend_cap), raised when the gate opened, in the task's phase, saying the
gate's reason. The status change is written to the event log like any.

Backward: the tasks escalated at an open gate go back to
`awaiting_approval` and those escalations are deleted.
"""

from django.db import migrations

GATE_REASONS = {
    "plan": "plan_approval",
    "merge": "merge_approval",
    "spend": "spend_cap",
}
ACTOR = "system:migration"


def forward(apps, schema_editor):
    Task = apps.get_model("tasks", "Task")
    Gate = apps.get_model("tasks", "Gate")
    Escalation = apps.get_model("tasks", "Escalation")
    Event = apps.get_model("events", "Event")
    waiting = Task.objects.filter(status="awaiting_approval")
    for task in waiting.iterator():
        gate = Gate.objects.filter(task=task, decision="").order_by("-id").first()
        if gate is not None and gate.escalation_id is None:
            escalation = Escalation.objects.create(
                task=task,
                created_at=gate.opened_at,
                phase=task.phase,
                reason=GATE_REASONS.get(gate.kind, "manual_review"),
                detail=gate.reason,
                questions=[],
            )
            gate.escalation = escalation
            gate.save(update_fields=["escalation"])
        Task.objects.filter(pk=task.pk).update(
            status="escalated", version=task.version + 1
        )
        Event.objects.create(
            kind="transition",
            task=task,
            actor=ACTOR,
            field="status",
            source="awaiting_approval",
            target="escalated",
            reason="a task waiting at a gate is escalated with the gate's "
            "escalation (docs/gates.md)",
            data={"transition": "await_approval"},
        )


def backward(apps, schema_editor):
    Task = apps.get_model("tasks", "Task")
    Gate = apps.get_model("tasks", "Gate")
    Escalation = apps.get_model("tasks", "Escalation")
    for gate in Gate.objects.filter(
        decision="", escalation__isnull=False, task__status="escalated"
    ):
        escalation_id = gate.escalation_id
        gate.escalation = None
        gate.save(update_fields=["escalation"])
        Escalation.objects.filter(pk=escalation_id).delete()
        Task.objects.filter(pk=gate.task_id).update(status="awaiting_approval")


class Migration(migrations.Migration):
    dependencies = [
        ("tasks", "0017_gates_are_escalations"),
        ("events", "0002_event_subject_and_kinds"),
    ]

    operations = [migrations.RunPython(forward, backward)]
