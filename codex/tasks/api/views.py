"""Task and escalation API views: check, validate, call one model method.
Roles are in codex.accounts.permissions, errors in codex.core.api.errors,
Idempotency-Key in codex.core.api.idempotency."""

from __future__ import annotations

from functools import partial

from django.http import HttpResponse
from django_fsm import TransitionNotAllowed
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import generics, mixins, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from codex.accounts.permissions import (
    HIDDEN,
    EscalationPermission,
    TaskControlPermission,
    TaskPermission,
    redact_events,
    sees_escalations,
    visible_tasks,
)
from codex.core.api.errors import Conflict
from codex.core.api.idempotency import idempotent
from codex.core.api.pagination import OldestFirstCursorPagination
from codex.core.api.schema import api_schema
from codex.core.api.views import ApiMixin, ReadOnlyApiViewSet
from codex.core.store import LeaseUnavailable, VersionConflict
from codex.tasks.api.actions import retry_task
from codex.tasks.api.filtersets import (
    ArtifactFilterSet,
    EscalationFilterSet,
    EventFilterSet,
    TaskFilterSet,
)
from codex.tasks.api.serializers import (
    ArtifactSerializer,
    ControlSerializer,
    EscalationResolveSerializer,
    EscalationSerializer,
    EventSerializer,
    ReviewReportSerializer,
    TaskCreateSerializer,
    TaskDetailSerializer,
    TaskReportsSerializer,
    TaskSerializer,
    VerificationReportSerializer,
    available_actions,
)
from codex.tasks.exports import issue_state, report_yaml, task_envelope_yaml
from codex.tasks.models import (
    AlreadyResolved,
    CreatedBy,
    Escalation,
    GateRefused,
    Task,
)

TASK_ACTIONS = ("pause", "resume", "cancel", "retry")


def actor_of(request: Request) -> str:
    """How the event log names whoever made this request."""
    return f"api:{request.user.get_username()}"


def get_task(request: Request, task_id: str) -> Task:
    """The task `task_id` if the caller may see it (404 otherwise, as for one
    that does not exist: an integrator cannot probe others' task ids)."""
    return generics.get_object_or_404(
        visible_tasks(request.user, Task.objects.select_related("repository")),
        task_id=task_id,
    )


def without_escalation_content(request: Request, export: dict) -> dict:
    """An export of a task as the caller may see it: for a role that may not
    read escalations, their questions, answers and reasons are left out."""
    if sees_escalations(request.user):
        return export
    if "escalations" in export:  # the task envelope
        export["escalations"] = [
            {key: entry[key] for key in ("timestamp", "phase", "resolved_at")}
            for entry in export["escalations"]
        ]
    communication = export.get("communication") or {}
    for entry in communication.get("escalations", []):  # the issue state
        entry["reason"] = HIDDEN
    return export


def task_response(task: Task, code: int = status.HTTP_200_OK) -> Response:
    response = Response(TaskDetailSerializer(task).data, status=code)
    if code == status.HTTP_201_CREATED:
        response["Location"] = f"/api/tasks/{task.task_id}/"
    return response


def domain_conflict(task: Task, action: str, exc: Exception) -> Conflict:
    """The 409 for a refused action, listing what the task allows now."""
    if isinstance(exc, LeaseUnavailable):
        return Conflict(
            f"{exc}; try again shortly.", code="lease_held", lease_holder=exc.holder
        )
    if isinstance(exc, VersionConflict):
        return Conflict(str(exc), code="version_mismatch")
    return Conflict(
        f"A task that is {task.status} cannot {action}.",
        code="transition_not_allowed",
        status=task.status,
        allowed_actions=available_actions(task),
    )


# -- tasks ------------------------------------------------------------------------


class TaskViewSet(mixins.CreateModelMixin, ReadOnlyApiViewSet):
    """Tasks: the list (newest first, filtered), one task by its id, and POST:
    a feature request becomes a task."""

    serializer_class = TaskSerializer
    permission_classes = [TaskPermission]
    filterset_class = TaskFilterSet
    lookup_field = "task_id"
    lookup_value_converter = "str"

    def get_queryset(self):
        return visible_tasks(
            self.request.user, Task.objects.select_related("repository")
        )

    def get_serializer_class(self):
        return TaskDetailSerializer if self.action == "retrieve" else TaskSerializer

    @api_schema(
        request=TaskCreateSerializer,
        responses={
            201: TaskDetailSerializer,
            200: OpenApiResponse(
                TaskDetailSerializer, description="A replay (Idempotency-Key)."
            ),
        },
    )
    @idempotent
    def create(self, request: Request) -> Response:
        serializer = TaskCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        request_fields = dict(serializer.validated_data)
        plan_approval = request_fields.pop("plan_approval", False)
        task, _ = Task.objects.create_from_request(
            **request_fields,
            plan_approval_required=plan_approval,
            created_by=CreatedBy.API,
            actor=actor_of(request),
            requested_by=request.user,
        )
        return task_response(task, status.HTTP_201_CREATED)


class TaskControl(ApiMixin, APIView):
    """POST /api/tasks/{task_id}/{pause|resume|cancel|retry}/."""

    permission_classes = [TaskControlPermission]
    conflicts = True
    action_name: str = ""

    @api_schema(
        request=ControlSerializer,
        responses={
            200: TaskDetailSerializer,
            201: OpenApiResponse(
                TaskDetailSerializer,
                description="retry of a failed task: the new task.",
            ),
            202: OpenApiResponse(
                TaskDetailSerializer,
                description="pause or cancel while a worker is in a step: "
                "applied when the step ends (see `deferred`).",
            ),
        },
    )
    @idempotent
    def post(self, request: Request, task_id: str) -> Response:
        task = get_task(request, task_id)
        serializer = ControlSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        by, reason = actor_of(request), serializer.validated_data["reason"]
        deferred = created = False
        try:
            if self.action_name == "retry":
                task, created = retry_task(task, by=by, reason=reason)
            else:
                task, deferred = task.request_control(
                    self.action_name, by=by, reason=reason
                )
        except (TransitionNotAllowed, LeaseUnavailable, VersionConflict) as exc:
            raise domain_conflict(task, self.action_name, exc) from None
        if created:
            return task_response(task, status.HTTP_201_CREATED)
        if not deferred:
            return task_response(task)
        body = TaskDetailSerializer(task).data
        body["deferred"] = {
            "action": self.action_name,
            "detail": f"A worker is in the middle of a step; the task will "
            f"{self.action_name} when that step ends.",
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)


class TaskEnvelope(ApiMixin, APIView):
    """GET /api/tasks/{task_id}/envelope/: the task envelope as YAML
    (docs/domain/tasks.md#exports)."""

    permission_classes = [TaskPermission]

    @api_schema(responses={(200, "application/yaml"): OpenApiTypes.OBJECT})
    def get(self, request: Request, task_id: str) -> HttpResponse:
        response = HttpResponse(
            task_envelope_yaml(
                get_task(request, task_id),
                redact=partial(without_escalation_content, request),
            ),
            content_type="application/yaml; charset=utf-8",
        )
        response["Content-Disposition"] = 'inline; filename="task-envelope.yml"'
        return response


class TaskIssueState(ApiMixin, APIView):
    """GET /api/tasks/{task_id}/issue-state/: the issue state as JSON
    (docs/domain/tasks.md#exports)."""

    permission_classes = [TaskPermission]

    @api_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, task_id: str) -> Response:
        return Response(
            without_escalation_content(request, issue_state(get_task(request, task_id)))
        )


class TaskEvents(ApiMixin, generics.ListAPIView):
    """GET /api/tasks/{task_id}/events/: the task's story, oldest first."""

    serializer_class = EventSerializer
    permission_classes = [TaskPermission]
    pagination_class = OldestFirstCursorPagination
    filterset_class = EventFilterSet

    def get_queryset(self):
        return get_task(self.request, self.kwargs["task_id"]).events.all()

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        return redact_events(self.request.user, page)


class TaskArtifacts(ApiMixin, generics.ListAPIView):
    """GET /api/tasks/{task_id}/artifacts/: every version of every document, with
    its content, newest first (?name=spec.md for one document's history)."""

    serializer_class = ArtifactSerializer
    permission_classes = [TaskPermission]
    filterset_class = ArtifactFilterSet

    def get_queryset(self):
        task = get_task(self.request, self.kwargs["task_id"])
        return task.artifacts.select_related("task")


class TaskReports(ApiMixin, APIView):
    """GET /api/tasks/{task_id}/reports/: verification and review reports by cycle.

    Not paginated: a task has at most max_cycles of each (3 and 2 by default),
    so the answer is bounded.
    """

    permission_classes = [TaskPermission]

    @api_schema(responses={200: TaskReportsSerializer})
    def get(self, request: Request, task_id: str) -> Response:
        task = get_task(request, task_id)
        return Response(
            {
                "verification": VerificationReportSerializer(
                    task.verification_reports.select_related("task").order_by("cycle"),
                    many=True,
                ).data,
                "review": ReviewReportSerializer(
                    task.review_reports.select_related("task").order_by("cycle"),
                    many=True,
                ).data,
            }
        )


class TaskReportFile(ApiMixin, APIView):
    """GET /api/tasks/{task_id}/reports/{verification|review}/report-{n}.yml:
    one report as the file of the storage layout
    (agent-verification/<task>/report-<n>.yml, agent-review/<task>/...)."""

    permission_classes = [TaskPermission]

    @api_schema(responses={(200, "application/yaml"): OpenApiTypes.OBJECT})
    def get(
        self, request: Request, task_id: str, kind: str, cycle: str
    ) -> HttpResponse:
        task = get_task(request, task_id)
        reports = {
            "verification": task.verification_reports,
            "review": task.review_reports,
        }[kind]
        report = generics.get_object_or_404(
            reports.select_related("task"), cycle=int(cycle)
        )
        response = HttpResponse(
            report_yaml(report), content_type="application/yaml; charset=utf-8"
        )
        response["Content-Disposition"] = f'inline; filename="report-{cycle}.yml"'
        return response


# -- escalations ---------------------------------------------------------------------


class EscalationViewSet(ReadOnlyApiViewSet):
    """Escalations: the list (open ones, newest first; ?state=resolved|all) and
    one by its id."""

    serializer_class = EscalationSerializer
    permission_classes = [EscalationPermission]
    queryset = Escalation.objects.select_related("task")
    filterset_class = EscalationFilterSet


class EscalationResolve(ApiMixin, APIView):
    """POST /api/escalations/{id}/resolve/: answers and resume, fail or cancel;
    a gate's escalation is approved or sent back here too (docs/gates.md)."""

    permission_classes = [EscalationPermission]
    conflicts = True

    @api_schema(
        request=EscalationResolveSerializer, responses={200: EscalationSerializer}
    )
    @idempotent
    def post(self, request: Request, pk: int) -> Response:
        escalation = generics.get_object_or_404(
            Escalation.objects.select_related("task", "task__repository"), pk=pk
        )
        serializer = EscalationResolveSerializer(
            data=request.data, context={"escalation": escalation}
        )
        serializer.is_valid(raise_exception=True)
        task = escalation.task
        try:
            task.resolve_escalation(
                escalation,
                **serializer.validated_data,
                by=actor_of(request),
                user=request.user,
            )
        except AlreadyResolved as exc:
            raise Conflict(
                str(exc),
                code="already_resolved",
                decision=exc.escalation.decision,
                resolved_by=exc.escalation.resolved_by_label,
            ) from None
        except GateRefused as refused:
            if refused.is_about_the_person:
                raise PermissionDenied(refused.reason) from None
            raise Conflict(refused.reason, code="gate_refused") from None
        except (TransitionNotAllowed, LeaseUnavailable, VersionConflict) as exc:
            raise domain_conflict(task, "resolve its escalation", exc) from None
        return Response(EscalationSerializer(escalation).data)
