"""A repository's GitHub Projects v2 board: the ids its GraphQL mutations need
(docs/domain/claims.md#board-columns).

Which issue is in which column is the claims app's own state (`BoardItem`).
"""

from __future__ import annotations

from django.db import models


class BoardStatus(models.TextChoices):
    """The board's Status column; labels are the option names on GitHub."""

    TODO = "todo", "Todo"
    IN_PROGRESS = "in_progress", "In Progress"
    DONE = "done", "Done"


class GitHubProject(models.Model):
    """A repository's Projects v2 board: the ids GraphQL mutations need
    (docs/domain/claims.md#board-columns, imported from `.github_project.json`)."""

    repository = models.OneToOneField(
        "repositories.Repository",
        on_delete=models.PROTECT,
        related_name="github_project",
    )
    project_id = models.CharField(
        max_length=100, unique=True, help_text='GraphQL node id, e.g. "PVT_kwDO...".'
    )
    project_number = models.PositiveIntegerField()
    status_field_id = models.CharField(max_length=100)
    todo_option_id = models.CharField("Todo option id", max_length=100)
    in_progress_option_id = models.CharField("In Progress option id", max_length=100)
    done_option_id = models.CharField("Done option id", max_length=100)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # The table made by the claims app, where the model began.
        db_table = "claims_githubproject"
        ordering = ["repository"]
        verbose_name = "GitHub project"

    def __str__(self) -> str:
        return f"project {self.project_number} of {self.repository}"

    def option_id(self, status: str) -> str:
        """The single-select option id that puts an item in `status`."""
        return {
            BoardStatus.TODO: self.todo_option_id,
            BoardStatus.IN_PROGRESS: self.in_progress_option_id,
            BoardStatus.DONE: self.done_option_id,
        }[status]
