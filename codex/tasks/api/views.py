"""Task API views: check, validate, call one model method."""

from __future__ import annotations

import hashlib

from django.http import HttpResponse
from django_fsm import TransitionNotAllowed
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from codex.core.api import Conflict, Unprocessable
from codex.core.models import LeaseUnavailable, VersionConflict
from codex.tasks.api.filters import filter_tasks
from codex.tasks.api.serializers import (
    CONTROL_ACTIONS,
    ControlSerializer,
    TaskCreateSerializer,
    TaskDetailSerializer,
    TaskSerializer,
)
from codex.tasks.exports import issue_state, task_envelope_yaml
from codex.tasks.models import CreatedBy, IdempotencyMismatch, Task

IDEMPOTENCY_KEY_MAX_LENGTH = 200
# Actions that wait for a worker's step to end instead of failing on its lease.
DEFERRABLE_ACTIONS = ("pause", "cancel")


def actor_of(request: Request) -> str:
    """How the event log names whoever made this request."""
    return f"api:{request.user.get_username()}"


def idempotency_key(request: Request) -> str | None:
    """The Idempotency-Key header, scoped to the caller; 400 when malformed."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    key = key.strip()
    if not key or len(key) > IDEMPOTENCY_KEY_MAX_LENGTH or not key.isprintable():
        raise ValidationError(
            {
                "Idempotency-Key": [
                    f"Must be 1 to {IDEMPOTENCY_KEY_MAX_LENGTH} printable characters."
                ]
            }
        )
    scope = hashlib.sha256(f"{request.user.pk}:{key}".encode()).hexdigest()
    return f"api:{scope}"


class TaskListCreate(generics.ListAPIView):
    """GET: tasks, newest first, filtered. POST: a feature request becomes a task."""

    serializer_class = TaskSerializer

    def get_queryset(self):
        return filter_tasks(
            Task.objects.select_related("repository"), self.request.query_params
        )

    def post(self, request: Request) -> Response:
        serializer = TaskCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            task, created = Task.objects.create_from_request(
                **serializer.validated_data,
                created_by=CreatedBy.API,
                actor=actor_of(request),
                idempotency_key=idempotency_key(request),
            )
        except IdempotencyMismatch as exc:
            raise Unprocessable(str(exc), code="idempotency_key_reused") from None
        response = Response(
            TaskDetailSerializer(task).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )
        if not created:
            response["Idempotent-Replayed"] = "true"
        return response


class TaskDetail(generics.RetrieveAPIView):
    serializer_class = TaskDetailSerializer
    lookup_field = "task_id"
    queryset = Task.objects.select_related("repository")


class TaskControl(APIView):
    """POST /api/tasks/{task_id}/{pause|resume|cancel}/."""

    action_name: str = ""

    def post(self, request: Request, task_id: str) -> Response:
        task = generics.get_object_or_404(
            Task.objects.select_related("repository"), task_id=task_id
        )
        serializer = ControlSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        by, reason = actor_of(request), serializer.validated_data["reason"]
        try:
            if self.action_name in DEFERRABLE_ACTIONS:
                task, deferred = task.request_control(
                    self.action_name, by=by, reason=reason
                )
            else:
                task, deferred = (
                    task.perform(self.action_name, by=by, reason=reason),
                    False,
                )
        except TransitionNotAllowed:
            allowed = [
                name
                for name in task.available_status_actions()
                if name in CONTROL_ACTIONS
            ]
            raise Conflict(
                f"A task that is {task.status} cannot {self.action_name}.",
                code="transition_not_allowed",
                status=task.status,
                allowed_actions=allowed,
            ) from None
        except LeaseUnavailable as exc:
            raise Conflict(
                f"{exc}; try again shortly.",
                code="lease_held",
                lease_holder=exc.holder,
            ) from None
        except VersionConflict as exc:
            raise Conflict(str(exc), code="version_mismatch") from None
        body = TaskDetailSerializer(task).data
        if not deferred:
            return Response(body)
        body["deferred"] = {
            "action": self.action_name,
            "detail": f"A worker is in the middle of a step; the task will "
            f"{self.action_name} when that step ends.",
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)


class TaskEnvelope(APIView):
    """GET /api/tasks/{task_id}/envelope/: spec 002's task-envelope.yml."""

    def get(self, request: Request, task_id: str) -> HttpResponse:
        task = generics.get_object_or_404(
            Task.objects.select_related("repository"), task_id=task_id
        )
        response = HttpResponse(
            task_envelope_yaml(task), content_type="application/yaml; charset=utf-8"
        )
        response["Content-Disposition"] = 'inline; filename="task-envelope.yml"'
        return response


class TaskIssueState(APIView):
    """GET /api/tasks/{task_id}/issue-state/: spec 003's issue-state.json."""

    def get(self, request: Request, task_id: str) -> Response:
        task = generics.get_object_or_404(
            Task.objects.select_related("repository"), task_id=task_id
        )
        return Response(issue_state(task))
