"""Worker entry points for claims and backlog runs."""

from __future__ import annotations

import logging

from django_fsm import TransitionNotAllowed

from codex.claims.models import BacklogRun, IssueClaim
from codex.core.store import VersionConflict

logger = logging.getLogger(__name__)


def expire_stale_claims() -> int:
    """Scheduled: return claims past their TTL to unclaimed (DESIGN "expire stale
    claims"). Safe to run twice at once: a claim changed meanwhile is skipped."""
    return IssueClaim.objects.expire_stale()


def play_backlog_rounds() -> int:
    """Scheduled: play one round of every running or counting backlog run
    (docs/domain/claims.md#backlog-runs); returns how many rounds were recorded.

    A run whose sessions are all busy, or whose round another worker is playing
    right now, records no round. A run an operator stopped meanwhile is skipped.
    One run's error does not keep the others from their round; it is raised
    afterwards so the worker records the job as failed.
    """
    played = 0
    errors: list[Exception] = []
    for run in BacklogRun.objects.active().select_related("repository"):
        try:
            outcome = run.play_round()
        except (TransitionNotAllowed, VersionConflict):
            # Stopped (or changed by an operator) while the round was played;
            # the round rolled back and the operator's change stands.
            continue
        except Exception as exc:  # noqa: BLE001 - re-raised after the loop
            logger.exception("%s: the backlog round failed", run)
            errors.append(exc)
            continue
        if outcome.played:
            played += 1
            logger.info(
                "%s: round %s started %d task(s), %d still active; now %s",
                run,
                run.rounds,
                len(outcome.tasks),
                outcome.active,
                outcome.state,
            )
    if errors:
        raise errors[0]
    return played


def follow_claims_on_board() -> dict[str, int]:
    """Scheduled: the project board follows the work
    (docs/domain/claims.md#board-columns: not on the board → Todo → In
    Progress → Done).

    An issue a task was made from is added to its repository's board (Todo);
    an item moves to In Progress when a session claims its issue or a task for
    it is being worked on, and to Done when the issue is closed or its task
    completed. Each addition and each move is pushed to GitHub at most once
    (perform_once).

    Reconciling instead of hooking every claim and task path keeps the board
    right however they changed (atomic bulk claiming, imports, the admin, the
    pipeline).
    """
    from codex.claims.models import BoardItem, BoardStatus

    moved = {"added": 0, "in_progress": 0, "done": 0, "pushed": 0}
    for item in _add_tasks_to_board():
        moved["added"] += 1
        if item.project.repository.forge == "github":
            push_board_status(item)
            moved["pushed"] += 1
    items = BoardItem.objects.exclude(status=BoardStatus.DONE).select_related(
        "project__repository"
    )
    for item in items:
        wanted, why = _wanted_status(item)
        steps = []
        if item.status == BoardStatus.TODO and wanted != BoardStatus.TODO:
            steps.append(("claim", why if wanted == BoardStatus.IN_PROGRESS else ""))
        if wanted == BoardStatus.DONE:
            steps.append(("close", why))
        if not steps:
            continue
        try:
            for step, reason in steps:
                item.perform(step, by="system:board", reason=reason or why)
        except (TransitionNotAllowed, VersionConflict):
            continue  # moved meanwhile; the next round looks again
        moved["done" if wanted == BoardStatus.DONE else "in_progress"] += 1
        if item.project.repository.forge == "github":
            push_board_status(item)
            moved["pushed"] += 1
    return moved


def _wanted_status(item) -> tuple[str, str]:
    """Where the item belongs, and why: Done when its issue is closed or its
    task completed; In Progress while a session holds its claim or a task for
    it is being worked on; else Todo."""
    from codex.claims.models import BoardStatus, ClaimState
    from codex.tasks.models import Status, Task

    repository = item.project.repository_id
    claim = IssueClaim.objects.filter(
        repository=repository, number=item.issue_number
    ).first()
    task = (
        Task.objects.filter(repository=repository, issue_number=item.issue_number)
        .order_by("-created_at", "-id")
        .values_list("status", flat=True)
        .first()
    )
    if claim is not None and claim.issue_closed:
        return BoardStatus.DONE, "issue closed"
    if task == Status.COMPLETED:
        return BoardStatus.DONE, "task completed"
    if claim is not None and claim.state == ClaimState.CLAIMED:
        return BoardStatus.IN_PROGRESS, "issue claimed"
    if task is not None and task != Status.PENDING and task not in TERMINAL:
        return BoardStatus.IN_PROGRESS, "task in progress"
    return BoardStatus.TODO, ""


# A task that ended without completing leaves its item where it is.
TERMINAL = ("completed", "failed", "cancelled")


def _add_tasks_to_board() -> list:
    """Put every issue a task was made from on its repository's board (spec
    000 "--add--> [Todo]"), at most once each; returns the new items."""
    from codex.claims.models import BoardItem
    from codex.github.models import GitHubProject
    from codex.tasks.models import Task

    added = []
    for project in GitHubProject.objects.select_related("repository"):
        if project.repository.forge != "github":
            continue
        on_board = BoardItem.objects.filter(project=project).values_list(
            "issue_number", flat=True
        )
        numbers = (
            Task.objects.filter(repository=project.repository_id)
            .exclude(issue_number__isnull=True)
            .exclude(issue_number__in=on_board)
            .values_list("issue_number", flat=True)
            .distinct()
        )
        for number in sorted(set(numbers)):
            try:
                added.append(add_issue_to_board(project, number))
            except Exception:  # noqa: BLE001 - one issue must not stop the rest
                logger.exception("could not add issue #%s to %s", number, project)
    return added


def add_issue_to_board(project, issue_number: int):
    """Add the issue to the project on GitHub (once: perform_once) and record
    its item in Todo; returns the BoardItem (the existing one if another
    worker recorded it first)."""
    from django.db import IntegrityError

    from codex.claims.models import BoardItem
    from codex.core.store import perform_once
    from integrations.github.projects import add_item, issue_node_id

    def add() -> dict:
        node = issue_node_id(project.repository.full_name, issue_number)
        return {"item_id": add_item(project, node)}

    # Adding an issue already on the board returns its item: a repeat is
    # harmless, so an unfinished attempt is simply made again.
    result = perform_once(
        f"github:board-add:{project.project_id}:{issue_number}",
        add,
        lookup=lambda: None,
        kind="github",
    )
    try:
        return BoardItem.objects.add(
            project, issue_number, result["item_id"], by="system:board"
        )
    except IntegrityError:
        return BoardItem.objects.get(project=project, issue_number=issue_number)


def push_board_status(item) -> dict:
    """Show the item's status on GitHub, once per (item, status). Setting a
    field value twice is harmless, so an unfinished earlier attempt is simply
    repeated (the lookup cannot tell, and need not)."""
    from codex.core.store import perform_once
    from integrations.github.projects import move_item

    def move() -> dict:
        # The database is the truth for the board: GitHub shows its status.
        move_item(item.project, item.item_id, item.status)
        return {"item_id": item.item_id, "status": str(item.status)}

    return perform_once(
        f"github:board:{item.item_id}:{item.status}",
        move,
        lookup=lambda: None,
        kind="github",
    )
