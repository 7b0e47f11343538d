"""API representations of tasks."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from codex.core.api.serializers import PrebuiltFieldsMixin, StrictInputMixin
from codex.events.models import Event
from codex.repositories.intake import read_intake_url
from codex.repositories.models import Repository
from codex.tasks.models import (
    Artifact,
    Decision,
    Escalation,
    Priority,
    ReviewReport,
    Status,
    Task,
    VerificationReport,
)
from codex.tasks.models.task import TITLE_MAX_LENGTH


class TaskCreateSerializer(
    PrebuiltFieldsMixin, StrictInputMixin, serializers.Serializer
):
    """The request fields of the task envelope (docs/domain/tasks.md#task-envelope),
    plus the repository's URL."""

    repository = serializers.CharField(max_length=300)
    title = serializers.CharField(max_length=TITLE_MAX_LENGTH)
    description = serializers.CharField(
        allow_blank=True, required=False, default="", max_length=50_000
    )
    priority = serializers.ChoiceField(
        choices=Priority.choices, default=Priority.MEDIUM
    )
    acceptance_criteria = serializers.CharField(
        allow_blank=True, required=False, default="", max_length=20_000
    )
    plan_approval = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Wait after planning until a person approves the spec, plan "
        "and tasks (the repository's policy may ask for it anyway).",
    )

    def validate_title(self, value: str) -> str:
        if any(ord(char) < 32 for char in value):
            raise serializers.ValidationError(
                "The title cannot contain control characters."
            )
        return value

    def validate_repository(self, value: str) -> Repository:
        """The repository named by `value`: a registered one, or one of the
        configured GitHub registered now (codex.repositories.intake). A URL
        intake refuses still names a repository an operator registered."""
        intake = read_intake_url(value)
        repository = None
        for url in intake.candidates:
            found = repository_by_url(url)
            # A row registered on first use before intake checked URLs does
            # not vouch for its URL: only an operator's registration does.
            if found is not None and (
                intake.refusal is None or not found.registered_on_first_use
            ):
                repository = found
                break
        if repository is None:
            if intake.refusal is not None:
                raise serializers.ValidationError(intake.refusal.messages)
            if settings.CODEX_INTAKE_REGISTERED_REPOSITORIES_ONLY:
                raise serializers.ValidationError(
                    "This repository is not registered with Codex; "
                    "ask an operator to add it."
                )
            repository, _ = Repository.objects.get_or_create(
                url=intake.canonical, defaults={"registered_on_first_use": True}
            )
        if not repository.accepts_tasks:
            raise serializers.ValidationError(
                "This repository does not accept new tasks."
            )
        return repository


def repository_by_url(url: str) -> Repository | None:
    """The repository registered at `url` (normalized), or None."""
    return Repository.objects.at_url(url)


class TaskSerializer(PrebuiltFieldsMixin, serializers.ModelSerializer):
    """A task as clients see it: identity, request, state and progress."""

    repository = serializers.CharField(source="repository.url", read_only=True)
    request = serializers.SerializerMethodField()
    feedback_loops = serializers.SerializerMethodField()
    lease = serializers.SerializerMethodField()

    class Meta:
        model = Task
        fields = [
            "task_id",
            "created_at",
            "created_by",
            "repository",
            "request",
            "status",
            "phase",
            "current_agent",
            "phase_entered_at",
            "current_task",
            "total_tasks",
            "pr_url",
            "branch",
            "feedback_loops",
            "blocked_reason",
            "blocked_until",
            "retry_count",
            "version",
            "updated_at",
            "lease",
            "finished_at",
        ]
        read_only_fields = fields

    def get_request(self, task: Task) -> dict:
        return {
            "title": task.title,
            "description": task.description,
            "priority": task.priority,
            "acceptance_criteria": task.acceptance_criteria,
        }

    def get_feedback_loops(self, task: Task) -> dict:
        return {
            "verification": {
                "cycle_count": task.verification_cycles,
                "max_cycles": task.verification_max_cycles,
            },
            "review": {
                "cycle_count": task.review_cycles,
                "max_cycles": task.review_max_cycles,
            },
        }

    def get_lease(self, task: Task) -> dict | None:
        if not task.lease_is_active:
            return None
        return {"holder": task.lease_holder, "expires_at": task.lease_expires_at}


class GateSerializer(serializers.Serializer):
    """The gate a task waits at (docs/gates.md): what for, why, on what."""

    kind = serializers.CharField(help_text="plan, merge or spend")
    mode = serializers.CharField(help_text="approval, or manual (a person merges)")
    reason = serializers.CharField()
    subject = serializers.CharField(
        help_text="The plan version or head commit a decision must name."
    )
    opened_at = serializers.DateTimeField()


class TaskDetailSerializer(TaskSerializer):
    """The detail view adds what can be done next and the phase progress."""

    available_actions = serializers.SerializerMethodField()
    retry_of = serializers.SerializerMethodField()
    waiting_for = serializers.SerializerMethodField()

    class Meta(TaskSerializer.Meta):
        fields = [
            *TaskSerializer.Meta.fields,
            "phase_progress",
            "errors",
            "available_actions",
            "retry_of",
            "waiting_for",
        ]
        read_only_fields = fields

    @extend_schema_field(GateSerializer(allow_null=True))
    def get_waiting_for(self, task: Task) -> dict | None:
        """The open gate of a task escalated at a gate, else null."""
        if task.status != Status.ESCALATED:
            return None
        gate = task.open_gate
        return None if gate is None else dict(GateSerializer(gate).data)

    def get_available_actions(self, task: Task) -> list[str]:
        return available_actions(task)

    def get_retry_of(self, task: Task) -> str | None:
        """The failed task this one retries (its idempotency key records it)."""
        key = task.idempotency_key or ""
        return (
            key.removeprefix(RETRY_KEY_PREFIX)
            if key.startswith(RETRY_KEY_PREFIX)
            else None
        )


CONTROL_ACTIONS = ("pause", "resume", "cancel")
RETRYABLE_STATUSES = (Status.BLOCKED, Status.FAILED)
RETRY_KEY_PREFIX = "retry:"


def available_actions(task: Task) -> list[str]:
    """What a client may ask of the task now: pause, resume, cancel, retry.

    Retry is offered on a blocked task even before its backoff ends (retrying
    is asking for "now") and on a failed one (which makes a new task).
    """
    actions = [
        name for name in task.available_status_actions() if name in CONTROL_ACTIONS
    ]
    if task.status in RETRYABLE_STATUSES:
        actions.append("retry")
    return actions


class ControlSerializer(StrictInputMixin, serializers.Serializer):
    reason = serializers.CharField(
        max_length=2000, required=False, allow_blank=True, default=""
    )


class EventSerializer(serializers.ModelSerializer):
    """One entry of a task's event log."""

    class Meta:
        model = Event
        fields = [
            "id",
            "created_at",
            "kind",
            "subject",
            "field",
            "source",
            "target",
            "actor",
            "reason",
            "data",
        ]
        read_only_fields = fields


class ArtifactSerializer(serializers.ModelSerializer):
    """One version of a document an agent wrote, with its content."""

    path = serializers.CharField(read_only=True)
    container = serializers.CharField(read_only=True)

    class Meta:
        model = Artifact
        fields = ["id", "name", "path", "container", "sha256", "created_at", "content"]
        read_only_fields = fields


class VerificationReportSerializer(serializers.ModelSerializer):
    path = serializers.CharField(read_only=True)

    class Meta:
        model = VerificationReport
        exclude = ["task"]
        read_only_fields = [f.name for f in VerificationReport._meta.fields]


class ReviewReportSerializer(serializers.ModelSerializer):
    path = serializers.CharField(read_only=True)
    blocking_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = ReviewReport
        exclude = ["task"]
        read_only_fields = [f.name for f in ReviewReport._meta.fields]


class TaskReportsSerializer(serializers.Serializer):
    """Both kinds of a task's reports, by cycle; bounded by the cycle limits."""

    verification = VerificationReportSerializer(many=True)
    review = ReviewReportSerializer(many=True)


class EscalationSerializer(serializers.ModelSerializer):
    """An escalation, its questions and (once resolved) its answer."""

    task = serializers.CharField(source="task.task_id", read_only=True)
    task_status = serializers.CharField(source="task.status", read_only=True)
    is_open = serializers.BooleanField(read_only=True)
    # "" until resolved; ModelSerializer drops allow_blank on read-only fields.
    decision = serializers.ChoiceField(
        choices=Decision.choices, allow_blank=True, read_only=True
    )

    class Meta:
        model = Escalation
        fields = [
            "id",
            "task",
            "task_status",
            "created_at",
            "phase",
            "reason",
            "detail",
            "questions",
            "is_open",
            "resolved_at",
            "resolved_by_label",
            "resolution",
            "answers",
            "decision",
            "consumed_at",
        ]
        read_only_fields = fields


class EscalationResolveSerializer(StrictInputMixin, serializers.Serializer):
    """A person's answer: one answer per question, a decision, a note. A
    gate's escalation (reason plan_approval, merge_approval, spend_cap) takes
    the gate's decisions: approve or request_changes (the note says what to
    change), naming what was decided on in `subject`; resume at a spend cap
    once it is raised."""

    decision = serializers.ChoiceField(choices=Decision.choices)
    subject = serializers.CharField(
        max_length=64,
        required=False,
        default="",
        allow_blank=True,
        help_text="A gate's plan version or head commit you decide on (required "
        "to approve or send back a plan).",
    )
    answers = serializers.ListField(
        child=serializers.CharField(max_length=10_000, allow_blank=True),
        max_length=50,
        required=False,
        default=list,
    )
    resolution = serializers.CharField(
        max_length=5000, required=False, allow_blank=True, default=""
    )

    def validate(self, attrs: dict) -> dict:
        escalation = self.context["escalation"]
        if attrs["decision"] not in escalation.decisions:
            raise serializers.ValidationError(
                {
                    "decision": [
                        f"A {escalation.get_reason_display().lower()} is answered "
                        f"with {', '.join(escalation.decisions)}."
                    ]
                }
            )
        if attrs["decision"] == Decision.REQUEST_CHANGES and not attrs["resolution"]:
            raise serializers.ValidationError(
                {"resolution": ["Say what should change."]}
            )
        questions = escalation.questions or []
        answers = attrs["answers"]
        resuming = attrs["decision"] == Decision.RESUME
        if (answers or (resuming and questions)) and len(answers) != len(questions):
            # The agent reads answers by position: a missing one is a wrong one.
            raise serializers.ValidationError(
                {
                    "answers": [
                        f"Give one answer per question ({len(questions)}); "
                        f"got {len(answers)}."
                    ]
                }
            )
        return attrs
