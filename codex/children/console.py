"""The console action that fans a task out to children (docs/children.md).

An operator selects one task on the task list, chooses "Fan out to
children", and names 1 to 5 children on an intermediate page (a title each,
a description if wanted). The children go through the same path as a
planner's split or a request listing them (`codex.children.spawn.
fan_out_task`): the fan-out, the parent's issue, one task per child, the
completion window. Only a task that has not started its implementation can
fan out: its own work would otherwise race its children's.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from codex.accounts.permissions import may
from codex.children.models import Child, FanOut
from codex.children.models.fan_out_queryset import MAX_CHILDREN
from codex.children.requests import TITLE_MAX_LENGTH, ChildListInvalid, ChildRequest
from codex.core.errors import ClassifiedFailure

ACTION = "fan_out_to_children"
# Phases before any code is written: the parent does no phase work once it
# fans out, so its children must start from the request or the plan.
FAN_OUT_PHASES = ("intake", "planning")
OPEN_STATUSES = ("pending", "in_progress")


class FanOutForm(forms.Form):
    """Up to five children: a title each (required for a child to exist)
    and an optional description."""

    def __init__(self, *args: Any, initial_children: list[ChildRequest] = (), **kw):
        super().__init__(*args, **kw)
        for n in range(1, MAX_CHILDREN + 1):
            given = initial_children[n - 1] if n <= len(initial_children) else None
            self.fields[f"title_{n}"] = forms.CharField(
                label=f"C{n} title",
                max_length=TITLE_MAX_LENGTH,
                required=False,
                initial=given.title if given else "",
            )
            self.fields[f"description_{n}"] = forms.CharField(
                label=f"C{n} description",
                required=False,
                widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
                initial=given.description if given else "",
            )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        for n in range(1, MAX_CHILDREN + 1):
            title = (data.get(f"title_{n}") or "").strip()
            if not title and (data.get(f"description_{n}") or "").strip():
                self.add_error(
                    f"title_{n}", "A child with a description needs a title."
                )
        if not self.children_from(data):
            raise ValidationError("Name at least one child (a title).")
        return data

    @staticmethod
    def children_from(data: dict[str, Any]) -> list[ChildRequest]:
        """The children named, numbered C1, C2, ... in the order given."""
        named = [
            (
                (data.get(f"title_{n}") or "").strip(),
                (data.get(f"description_{n}") or "").strip(),
            )
            for n in range(1, MAX_CHILDREN + 1)
        ]
        return [
            ChildRequest(child_id=f"C{number}", title=title, description=text)
            for number, (title, text) in enumerate(
                ((t, d) for t, d in named if t), start=1
            )
        ]

    def children(self) -> list[ChildRequest]:
        return self.children_from(self.cleaned_data)


def why_not(task) -> str:
    """Why `task` cannot fan out now; "" when it can."""
    if task.status not in OPEN_STATUSES:
        return f"it is {task.get_status_display().lower()}"
    if task.phase not in FAN_OUT_PHASES:
        return f"it is in {task.phase}: only a task in intake or planning can"
    if FanOut.objects.filter(parent=task).exists():
        return "it has fanned out already"
    if Child.objects.filter(task=task).exists():
        return "it is a child of another task"
    if task.lease_is_active:
        return "a worker is in its step; try again when the step ends"
    return ""


def suggested_children(task) -> list[ChildRequest]:
    """What the page starts from: the planner's split or the listed children."""
    from codex.children.flow import requested_children

    return requested_children(task)


@admin.action(description="Fan out to children (1 to 5)", permissions=["change"])
def fan_out_to_children(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet
) -> HttpResponse | None:
    """The task list's action: one task, then the page naming its children;
    on a valid post, the fan-out."""
    from codex.children.spawn import fan_out_task

    user = request.user
    if not may(user, "task.control"):
        modeladmin.message_user(
            request, "Only operators can fan a task out.", messages.ERROR
        )
        return None
    tasks = list(queryset[:2])
    if len(tasks) != 1:
        modeladmin.message_user(
            request, "Select exactly one task to fan out.", messages.WARNING
        )
        return None
    task = tasks[0]
    refused = why_not(task)
    if refused:
        modeladmin.message_user(
            request, f"{task.task_id} cannot fan out: {refused}.", messages.WARNING
        )
        return None
    if "apply" in request.POST:
        form = FanOutForm(request.POST)
        if form.is_valid():
            by = f"user:{user.get_username()}"
            try:
                fan_out = fan_out_task(task, form.children(), by=by)
            except (ChildListInvalid, ClassifiedFailure) as exc:
                modeladmin.message_user(
                    request, f"{task.task_id} did not fan out: {exc}", messages.ERROR
                )
                return None
            modeladmin.message_user(
                request,
                f"{task.task_id} fanned out to {fan_out.expected_child_count} "
                f"child task(s); they report on issue #{fan_out.issue_number}.",
                messages.SUCCESS,
            )
            return None
    else:
        form = FanOutForm(initial_children=suggested_children(task))
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": f"Fan {task.task_id} out to children",
        "task": task,
        "form": form,
        "opts": modeladmin.model._meta,
        "action": ACTION,
        "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
        "max_children": MAX_CHILDREN,
    }
    return TemplateResponse(request, "admin/children/fan_out.html", context)
