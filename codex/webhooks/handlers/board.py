"""`projects_v2_item`: board cards moved on GitHub."""

from __future__ import annotations

from django_fsm import can_proceed

from codex.claims.models.board import BoardItem, BoardStatus
from codex.core.store import VersionConflict
from codex.events.models import Event, EventKind
from codex.webhooks.handlers.common import Context, Result, ignored, obj, processed

# The board's state machine only moves forward: todo → in_progress → done.
TRANSITION_TO = {BoardStatus.IN_PROGRESS: "claim", BoardStatus.DONE: "close"}
STATUS_NAMES = {status.label.casefold(): status for status in BoardStatus}


def handle(context: Context) -> Result:
    """Record the change (an event); when the item is one of ours and its
    Status field was set to an option we know, move our BoardItem with it, as
    far as the board's forward-only state machine allows."""
    item = obj(context.payload.get("projects_v2_item"))
    node_id = str(item.get("node_id") or "")
    if not node_id:
        return ignored("no item node id")
    changes = obj(context.payload.get("changes"))
    Event.log(
        EventKind.WEBHOOK,
        actor=context.actor,
        reason=f"project item {context.action} on GitHub",
        subject=f"board-item:{node_id}",
        data={
            "delivery": context.delivery.delivery_id,
            "action": context.action,
            "project_node_id": item.get("project_node_id"),
            "content_node_id": item.get("content_node_id"),
            "changes": changes,
        },
    )
    board_item = (
        BoardItem.objects.select_related("project").filter(item_id=node_id).first()
    )
    if board_item is None:
        return processed("recorded; the item is not on a board Codex keeps")
    target = _new_status(board_item, changes) if context.action == "edited" else None
    if target is None or target == board_item.status:
        return processed(f"recorded for #{board_item.issue_number}; status unchanged")
    transition = TRANSITION_TO.get(target)
    for _ in range(3):
        if transition is None or not can_proceed(getattr(board_item, transition)):
            return processed(
                f"recorded; #{board_item.issue_number} cannot move from "
                f"{board_item.status} to {target} here"
            )
        try:
            board_item.perform(
                transition, by=context.actor, reason="moved on the GitHub board"
            )
            return processed(f"#{board_item.issue_number} moved to {target}")
        except VersionConflict:
            board_item.refresh_from_db()
    return processed("recorded; the item kept changing, status not moved")


def _new_status(board_item: BoardItem, changes: dict) -> str | None:
    """The BoardStatus the Status field was set to, when the payload says."""
    field_value = obj(changes.get("field_value"))
    project = board_item.project
    if field_value.get("field_node_id") != project.status_field_id:
        return None
    to = field_value.get("to")
    option_id = to.get("id") if isinstance(to, dict) else to
    name = to.get("name") if isinstance(to, dict) else None
    for status in BoardStatus:
        if option_id and option_id == project.option_id(status):
            return status
    if isinstance(name, str):
        return STATUS_NAMES.get(name.casefold())
    return None
