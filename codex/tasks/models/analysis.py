"""What the issue-agent pipeline learns about a task
(docs/domain/tasks.md#issue-pipeline).

Triage and analysis are attached to the task (one each); build results come
once per verification cycle; questions travel between roles (or to a person);
learnings are kept per repository and fed to later tasks.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

OUTPUT_EXCERPT_LIMIT = 4000


class TriageType(models.TextChoices):
    BUG_FIX = "BUG_FIX", "Bug fix"
    NEW_FEATURE = "NEW_FEATURE", "New feature"
    REFACTOR_STYLE = "REFACTOR_STYLE", "Refactor / style"


class Scope(models.TextChoices):
    SMALL = "SMALL", "Small"
    MEDIUM = "MEDIUM", "Medium"
    LARGE = "LARGE", "Large"


class Complexity(models.TextChoices):
    SIMPLE = "simple", "Simple"
    MODERATE = "moderate", "Moderate"
    COMPLEX = "complex", "Complex"


class Role(models.TextChoices):
    """Who asks and answers: the issue pipeline's agents, the phase roles they
    map to (docs/domain/tasks.md#roles), a person."""

    TRIAGE = "triage", "Triage / product manager"
    ANALYST = "analyst", "Analyst / planner"
    WRITER = "writer", "Writer / developer"
    BUILD = "build", "Build / QA"
    REVIEWER = "reviewer", "Reviewer"
    COMMITTER = "committer", "Committer / release manager"
    HUMAN = "human", "A person"


class Triage(models.Model):
    """`triage` (docs/domain/tasks.md#issue-pipeline): what kind of work this is
    and whether to proceed.

    `should_proceed = false` stops the pipeline; `rejection_reason` says why.
    """

    task = models.OneToOneField(
        "tasks.Task", on_delete=models.CASCADE, related_name="triage"
    )
    type = models.CharField(max_length=20, choices=TriageType.choices)
    scope = models.CharField(max_length=10, choices=Scope.choices)
    complexity = models.CharField(max_length=10, choices=Complexity.choices)
    should_proceed = models.BooleanField(default=True)
    rejection_reason = models.TextField(blank=True)
    completed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "triage"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(should_proceed=True)
                | ~models.Q(rejection_reason=""),
                name="triage_rejection_has_reason",
            )
        ]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.type} {self.scope}/{self.complexity}"


def _validate_list_of_strings(value: Any, name: str) -> None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError({name: "Must be a list of strings."})


class Analysis(models.Model):
    """`analysis` (docs/domain/tasks.md#issue-pipeline): the analyst's brief for
    the writer.

    `files`: [{path, purpose, action (create|modify|delete)}]; `test_requirement`:
    {required, type, location, description}; `must_do` / `must_not_do`: lists of
    rules the writer must respect; `brief`: the full Markdown brief.
    """

    FILE_ACTIONS = ("create", "modify", "delete")

    task = models.OneToOneField(
        "tasks.Task", on_delete=models.CASCADE, related_name="analysis"
    )
    files = models.JSONField(default=list, blank=True)
    patterns = models.JSONField(default=list, blank=True)
    test_requirement = models.JSONField(default=dict, blank=True)
    must_do = models.JSONField(default=list, blank=True)
    must_not_do = models.JSONField(default=list, blank=True)
    brief = models.TextField()
    completed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "analyses"

    def __str__(self) -> str:
        return f"{self.task_id}: {len(self.files)} file(s)"

    def clean(self) -> None:
        """Check the JSON shapes (docs/domain/tasks.md#issue-pipeline); `brief`
        and the test requirement are required outputs of the analyst."""
        if not isinstance(self.files, list) or not all(
            isinstance(item, dict)
            and isinstance(item.get("path"), str)
            and item.get("action") in self.FILE_ACTIONS
            for item in self.files
        ):
            raise ValidationError(
                {
                    "files": "Each file needs a path and an action "
                    "(create, modify or delete)."
                }
            )
        for name in ("patterns", "must_do", "must_not_do"):
            _validate_list_of_strings(getattr(self, name), name)
        requirement = self.test_requirement
        if not isinstance(requirement, dict) or not isinstance(
            requirement.get("required"), bool
        ):
            raise ValidationError(
                {"test_requirement": "Needs at least {'required': true|false}."}
            )
        if not self.brief.strip():
            raise ValidationError({"brief": "The brief is a required output."})


class BuildResult(models.Model):
    """`build` (docs/domain/tasks.md#issue-pipeline): the commands run in one
    verification cycle and how they went.

    `commands_run`: [{command, exit_code, output}] with each output cut to its last
    OUTPUT_EXCERPT_LIMIT characters (the end of a log says why it failed).
    """

    task = models.ForeignKey(
        "tasks.Task", on_delete=models.CASCADE, related_name="build_results"
    )
    cycle = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField(default=timezone.now)
    commands_run = models.JSONField(default=list, blank=True)
    tests_passed = models.BooleanField(default=False)
    lint_passed = models.BooleanField(default=False)
    type_check_passed = models.BooleanField(default=False)
    errors = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["task", "cycle"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "cycle"], name="build_result_per_cycle"
            ),
            models.CheckConstraint(
                condition=models.Q(cycle__gte=1), name="build_cycle_from_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} build {self.cycle}"

    @property
    def passed(self) -> bool:
        return self.tests_passed and self.lint_passed and self.type_check_passed

    @staticmethod
    def command(command: str, exit_code: int, output: str) -> dict[str, Any]:
        """One `commands_run` entry, with the output excerpted."""
        if len(output) > OUTPUT_EXCERPT_LIMIT:
            output = "…" + output[-OUTPUT_EXCERPT_LIMIT:]
        return {"command": command, "exit_code": exit_code, "output": output}


class AlreadyAnswered(Exception):
    """The question was answered before; answers are not overwritten."""


class AgentQuestionQuerySet(models.QuerySet):
    def unanswered(self) -> AgentQuestionQuerySet:
        return self.filter(answered_at__isnull=True)


class AgentQuestion(models.Model):
    """`communication.questions` (docs/domain/tasks.md#issue-pipeline): one role
    asks another (or a person).

    The orchestrator routes the question and waits for the answer; a question to
    `human` is answered through an escalation. `answered` is derived from
    `answered_at`; an answer is written once.
    """

    task = models.ForeignKey(
        "tasks.Task", on_delete=models.CASCADE, related_name="questions"
    )
    from_role = models.CharField(max_length=20, choices=Role.choices)
    to_role = models.CharField(max_length=20, choices=Role.choices)
    question = models.TextField()
    asked_at = models.DateTimeField(default=timezone.now)
    answer = models.TextField(blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    answered_by = models.CharField(max_length=200, blank=True)
    answered_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    objects = AgentQuestionQuerySet.as_manager()

    class Meta:
        ordering = ["asked_at", "id"]
        indexes = [
            models.Index(
                fields=["task", "asked_at"],
                condition=models.Q(answered_at__isnull=True),
                name="question_unanswered",
            )
        ]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(from_role=models.F("to_role")),
                name="question_to_another_role",
            )
        ]

    def __str__(self) -> str:
        return f"{self.from_role} → {self.to_role}: {self.question[:60]}"

    @property
    def answered(self) -> bool:
        return self.answered_at is not None

    def record_answer(self, answer: str, *, by: str, user=None) -> None:
        """Answer the question once; AlreadyAnswered on a second answer, even from
        another process (the UPDATE matches only an unanswered question)."""
        if not answer.strip():
            raise ValidationError({"answer": "An answer cannot be empty."})
        now = timezone.now()
        updated = AgentQuestion.objects.filter(
            pk=self.pk, answered_at__isnull=True
        ).update(answer=answer, answered_at=now, answered_by=by, answered_by_user=user)
        if not updated:
            raise AlreadyAnswered(f"question {self.pk} was already answered")
        self.answer, self.answered_at, self.answered_by = answer, now, by
        self.answered_by_user = user


class LearningQuerySet(models.QuerySet):
    def for_prompt(self, repository, limit: int = 20) -> LearningQuerySet:
        """The most recent learnings of a repository, for the next task's prompt."""
        return self.filter(repository=repository).order_by("-created_at", "-id")[:limit]


class Learning(models.Model):
    """`learnings.observations` (docs/domain/tasks.md#issue-pipeline): what an
    agent noticed about a repository.

    Kept per repository so that later tasks start with it (`type` is free text
    such as "pattern_discovered").
    """

    repository = models.ForeignKey(
        "repositories.Repository", on_delete=models.CASCADE, related_name="learnings"
    )
    task = models.ForeignKey(
        "tasks.Task",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="learnings",
    )
    agent = models.CharField(max_length=20, choices=Role.choices)
    type = models.CharField(max_length=50)
    content = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    objects = LearningQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["repository", "-created_at"], name="learning_recent")
        ]

    def __str__(self) -> str:
        return f"{self.agent} {self.type}: {self.content[:60]}"
