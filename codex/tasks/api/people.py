"""The API's gate and steering actions (docs/gates.md):

    POST /api/tasks/{task_id}/approve/           {"subject": "<plan version or sha>"}
    POST /api/tasks/{task_id}/request-changes/   {"subject": ..., "feedback": "..."}
    POST /api/tasks/{task_id}/steer/             {"message": "..."}

Refusals carry their reason: 403 when the person may not decide (the
requester alone, no write access), 409 when the task's state does not allow
it (not waiting, a stale plan, no plan cycles left).
"""

from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from codex.accounts.permissions import GatePermission, SteerPermission
from codex.core.api.errors import Conflict
from codex.core.api.idempotency import idempotent
from codex.core.api.schema import api_schema
from codex.core.api.serializers import StrictInputMixin
from codex.core.api.views import ApiMixin
from codex.core.store import LeaseUnavailable, VersionConflict
from codex.tasks.api.serializers import TaskDetailSerializer
from codex.tasks.models import Decider, GateDecision, GateRefused, SteeringSource
from codex.tasks.models.steering import MESSAGE_MAX_LENGTH, send_message


class GateDecisionSerializer(StrictInputMixin, serializers.Serializer):
    subject = serializers.CharField(
        max_length=64,
        required=False,
        default="",
        allow_blank=True,
        help_text="What you decide on: the plan version shown with the gate, or "
        "the pull request's head sha. Required for a plan: a plan rewritten "
        "since you read it is refused.",
    )
    feedback = serializers.CharField(
        max_length=10_000, required=False, default="", allow_blank=True
    )


class SteerSerializer(StrictInputMixin, serializers.Serializer):
    message = serializers.CharField(max_length=MESSAGE_MAX_LENGTH)


def _actor(request: Request) -> str:
    return f"user:{request.user.get_username()}"


def _task(request: Request, task_id: str):
    from codex.tasks.api.views import get_task

    return get_task(request, task_id)


class TaskGateDecision(ApiMixin, APIView):
    """Approve the gate a task waits at, or send its plan back with changes."""

    permission_classes = [GatePermission]
    conflicts = True
    decision: str = GateDecision.APPROVED

    @api_schema(request=GateDecisionSerializer, responses={200: TaskDetailSerializer})
    @idempotent
    def post(self, request: Request, task_id: str) -> Response:
        task = _task(request, task_id)
        serializer = GateDecisionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        gate = task.open_gate
        if gate is not None and gate.kind == "plan" and not data["subject"]:
            raise Conflict(
                "Name the plan version you approve (`subject`): "
                f"the current one is {gate.subject}.",
                code="gate_refused",
                subject=gate.subject,
            )
        decider = Decider(label=_actor(request), user=request.user, may_approve=True)
        try:
            task.decide_gate(
                self.decision,
                decider=decider,
                subject=data["subject"],
                feedback=data["feedback"],
            )
        except GateRefused as refused:
            if refused.is_about_the_person:
                raise PermissionDenied(refused.reason) from None
            raise Conflict(
                refused.reason,
                code="gate_refused",
                subject=gate.subject if gate is not None else "",
            ) from None
        except (LeaseUnavailable, VersionConflict):
            raise Conflict(
                "The task is being changed right now; try again in a moment.",
                code="busy",
            ) from None
        return Response(TaskDetailSerializer(task).data)


class TaskSteer(ApiMixin, APIView):
    """Send a message to the task's agents, read before their next step."""

    permission_classes = [SteerPermission]

    @api_schema(request=SteerSerializer, responses={201: TaskDetailSerializer})
    @idempotent
    def post(self, request: Request, task_id: str) -> Response:
        task = _task(request, task_id)
        serializer = SteerSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            send_message(
                task,
                serializer.validated_data["message"],
                author=_actor(request),
                source=SteeringSource.API,
                user=request.user,
            )
        except ValueError as exc:
            raise Conflict(str(exc), code="not_steerable") from None
        return Response(TaskDetailSerializer(task).data, status=status.HTTP_201_CREATED)
