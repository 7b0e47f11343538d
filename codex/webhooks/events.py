"""Which GitHub events and actions Codex acts on."""

from __future__ import annotations

# event -> actions worth a worker's time (None: every action). Anything else is
# stored as ignored at once, without enqueueing a job.
HANDLED: dict[str, frozenset[str] | None] = {
    "issues": frozenset({"opened", "labeled"}),
    "issue_comment": frozenset({"created"}),
    "pull_request": frozenset({"closed"}),
    "pull_request_review": frozenset({"submitted"}),
    "check_suite": frozenset({"completed"}),
    "check_run": frozenset({"completed"}),
    "projects_v2_item": None,
    "installation": None,
    "installation_repositories": None,
}


def is_handled(event: str, action: str) -> bool:
    """Whether a delivery of `event` with `action` needs processing."""
    if event not in HANDLED:
        return False
    actions = HANDLED[event]
    return actions is None or action in actions
