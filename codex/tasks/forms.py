"""Forms of the team pages: the feature-request intake and escalation answers.

Validation mirrors the API's (codex.tasks.api.serializers) by calling the same
validators, so a request the API refuses is refused here with the same words.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django import forms
from rest_framework import serializers

from codex.repositories.models import Repository
from codex.tasks.api.serializers import TaskCreateSerializer
from codex.tasks.models import Decision, Escalation, Priority
from codex.tasks.models.task import TITLE_MAX_LENGTH

# The API's limits, read from its serializer so the two intakes cannot drift.
_API_FIELDS = TaskCreateSerializer().fields
DESCRIPTION_MAX_LENGTH = _API_FIELDS["description"].max_length
CRITERIA_MAX_LENGTH = _API_FIELDS["acceptance_criteria"].max_length
REPOSITORY_MAX_LENGTH = _API_FIELDS["repository"].max_length
FORM_TOKEN_BYTES = 16
ANSWER_MAX_LENGTH = 10_000


def new_form_token() -> str:
    """A fresh token for one rendering of the request form (its idempotency key)."""
    return secrets.token_hex(FORM_TOKEN_BYTES)


def _api_check(validator, value: Any) -> Any:
    """Run one of the API serializer's field validators; turn its error into a
    form error so the message appears under the field."""
    try:
        return validator(value)
    except serializers.ValidationError as exc:
        detail = exc.detail if isinstance(exc.detail, list) else [exc.detail]
        raise forms.ValidationError([str(message) for message in detail]) from None


class TaskRequestForm(forms.Form):
    """The web form's intake (`created_by` "form",
    docs/domain/tasks.md#created-by): a person asks for a feature.

    `form_token` is generated when the form is rendered and becomes the
    idempotency key, so submitting the same rendering twice (a double click, a
    browser retry) returns the task the first submission created.
    """

    repository = forms.CharField(
        label="Repository URL",
        max_length=REPOSITORY_MAX_LENGTH,
        widget=forms.URLInput(attrs={"placeholder": "https://github.com/owner/name"}),
    )
    title = forms.CharField(max_length=TITLE_MAX_LENGTH)
    description = forms.CharField(
        required=False,
        max_length=DESCRIPTION_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 8}),
    )
    priority = forms.ChoiceField(choices=Priority.choices, initial=Priority.MEDIUM)
    acceptance_criteria = forms.CharField(
        required=False,
        max_length=CRITERIA_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 5, "placeholder": "- Users can log in"}),
        help_text="One criterion per line; QA judges each one.",
    )
    plan_approval = forms.BooleanField(
        required=False,
        label="Approve the plan before any code is written",
        help_text="After planning, the task waits until someone with write access "
        "approves its spec, plan and tasks (or asks for changes).",
    )
    form_token = forms.RegexField(
        regex=rf"^[0-9a-f]{{{FORM_TOKEN_BYTES * 2}}}$",
        widget=forms.HiddenInput,
        error_messages={
            "invalid": "This form has expired; reload the page and submit again.",
            "required": "This form has expired; reload the page and submit again.",
        },
    )

    def clean_title(self) -> str:
        return _api_check(
            TaskCreateSerializer().validate_title, self.cleaned_data["title"]
        )

    def clean_repository(self) -> Repository:
        return _api_check(
            TaskCreateSerializer().validate_repository,
            self.cleaned_data["repository"],
        )

    def idempotency_key(self, user) -> str:
        """The token scoped to the user, so nobody can replay another's form."""
        token = self.cleaned_data["form_token"]
        return "form:" + hashlib.sha256(f"{user.pk}:{token}".encode()).hexdigest()

    def request_fields(self) -> dict[str, Any]:
        """What create_from_request takes from this form."""
        return {
            name: self.cleaned_data[name]
            for name in (
                "repository",
                "title",
                "description",
                "priority",
                "acceptance_criteria",
            )
        } | {"plan_approval_required": bool(self.cleaned_data.get("plan_approval"))}

    def renew_token(self) -> None:
        """Give a bound form a fresh token (its old one was spent on another
        request), so the person can submit the edited form as a new task."""
        self.data = self.data.copy()
        self.data[self.add_prefix("form_token")] = new_form_token()


def question_text(question: Any) -> str:
    """A question as text: agents send strings, but accept {"question": ...}."""
    if isinstance(question, dict):
        return str(question.get("question") or question.get("text") or question)
    return str(question)


class EscalationAnswerForm(forms.Form):
    """A person's answer to one escalation: one field per question, an optional
    note, and the decision. Answers are required to resume (the agent goes on
    with them); failing or cancelling needs none.

    A gate's escalation (docs/gates.md) offers the gate's own decisions
    (approve, ask for changes; resume at a spend cap) and carries what the
    person decided on (`subject`: the plan version or head commit shown), so
    a plan rewritten since is refused by the gate's guards."""

    resolution = forms.CharField(
        label="Note",
        required=False,
        max_length=ANSWER_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Goes to the event log and to the agent with the answers.",
    )
    decision = forms.ChoiceField(
        choices=Decision.choices, initial=Decision.RESUME, widget=forms.RadioSelect
    )
    subject = forms.CharField(required=False, max_length=64, widget=forms.HiddenInput)

    def __init__(self, *args: Any, escalation: Escalation, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", f"esc{escalation.pk}")
        super().__init__(*args, **kwargs)
        self.escalation = escalation
        allowed = escalation.decisions
        self.fields["decision"].choices = [
            (value, label) for value, label in Decision.choices if value in allowed
        ]
        self.fields["decision"].initial = allowed[0]
        gate = getattr(escalation, "gate", None) if escalation.is_gate else None
        self.gate = gate
        if gate is not None:
            self.fields["subject"].initial = gate.subject
            if gate.kind == "plan":
                self.fields["resolution"].label = "What should change"
                self.fields[
                    "resolution"
                ].help_text = "Needed to ask for changes: it goes back to the planner."
        self.questions = [question_text(q) for q in escalation.questions or []]
        for index, question in enumerate(self.questions):
            self.fields[f"answer_{index}"] = forms.CharField(
                label=question,
                required=False,
                max_length=ANSWER_MAX_LENGTH,
                widget=forms.Textarea(attrs={"rows": 2}),
            )
        # Keep the note and decision after the answers, in reading order.
        self.order_fields([f"answer_{i}" for i in range(len(self.questions))])

    def answer_fields(self) -> list[forms.BoundField]:
        return [self[f"answer_{i}"] for i in range(len(self.questions))]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        decision = cleaned.get("decision")
        if decision == Decision.RESUME:
            for index in range(len(self.questions)):
                name = f"answer_{index}"
                if name in cleaned and not cleaned[name]:
                    self.add_error(name, "Answer this question to resume the task.")
        if decision == Decision.REQUEST_CHANGES and not cleaned.get("resolution"):
            self.add_error("resolution", "Say what should change.")
        return cleaned

    @property
    def answers(self) -> list[str]:
        return [self.cleaned_data[f"answer_{i}"] for i in range(len(self.questions))]
