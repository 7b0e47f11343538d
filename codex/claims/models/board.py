"""Which column of the GitHub Projects v2 board each issue is in
(docs/domain/claims.md#board-columns); the board's own ids are
`codex.github.models.GitHubProject`."""

from __future__ import annotations

from django.db import models, transaction
from django.utils import timezone
from django_fsm import FSMField, transition

from codex.core.store import LoggedStateModel, VersionedQuerySet
from codex.events.models import Event, EventKind
from codex.github.models import BoardStatus, GitHubProject


class BoardItemQuerySet(VersionedQuerySet):
    """Board items; `add` is how an issue gets onto the board."""

    protected_update_fields = frozenset({"status"})

    def add(
        self, project: GitHubProject, issue_number: int, item_id: str, *, by: str
    ) -> BoardItem:
        """Put issue `issue_number` on the board in Todo ("--add--> [Todo]")."""
        with transaction.atomic():
            item = self.create(
                project=project, issue_number=issue_number, item_id=item_id
            )
            Event.log(
                EventKind.CLAIM,
                actor=by,
                reason="added to the project board",
                subject=item.event_subject,
                field="board_status",
                target=item.status,
                data={"transition": "add", "item_id": item_id},
            )
        return item


class BoardItem(LoggedStateModel):
    """An issue's card on the project board (docs/domain/claims.md#board-columns).

    Status::

        [not on board] ──add──▶ todo ──claim──▶ in_progress ──close──▶ done

    `status_updated_at` is the imported file's `updated_at` (last status change); the
    inherited `updated_at` is the row's own write time.
    """

    project = models.ForeignKey(
        GitHubProject, on_delete=models.CASCADE, related_name="items"
    )
    issue_number = models.PositiveIntegerField()
    item_id = models.CharField(
        max_length=100, unique=True, help_text='GraphQL node id, e.g. "PVTI_...".'
    )
    status = FSMField(
        max_length=20,
        choices=BoardStatus.choices,
        default=BoardStatus.TODO,
        protected=True,
    )
    added_at = models.DateTimeField(default=timezone.now)
    status_updated_at = models.DateTimeField(null=True, blank=True)

    objects = BoardItemQuerySet.as_manager()

    event_kind = EventKind.CLAIM
    state_field = "board_status"

    class Meta:
        ordering = ["project", "issue_number"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "issue_number"], name="board_item_one_per_issue"
            )
        ]

    def __str__(self) -> str:
        return f"#{self.issue_number} ({self.get_status_display()})"

    @property
    def event_subject(self) -> str:
        return f"board:{self.project.repository.full_name}#{self.issue_number}"

    @property
    def option_id(self) -> str:
        """The project's option id for the current status."""
        return self.project.option_id(self.status)

    @transition(
        field=status,
        source=BoardStatus.TODO,
        target=BoardStatus.IN_PROGRESS,
        custom={"label": "Move to In Progress"},
    )
    def claim(self, *, by: str, reason: str = "issue claimed") -> None:
        """A session claimed the issue."""
        self.status_updated_at = timezone.now()

    @transition(
        field=status,
        source=BoardStatus.IN_PROGRESS,
        target=BoardStatus.DONE,
        custom={"label": "Move to Done"},
    )
    def close(self, *, by: str, reason: str = "issue closed") -> None:
        """The issue was closed."""
        self.status_updated_at = timezone.now()
