"""Test data for claims, backlog runs and the project board."""

from __future__ import annotations

import itertools
from datetime import datetime

from codex.claims.models import BacklogRun, BoardItem, IssueClaim
from codex.github.models import GitHubProject
from codex.repositories.models import Repository
from tests.factories import make_repository

_numbers = itertools.count(1)


def make_claim(
    repository: Repository | None = None, number: int | None = None, **fields
) -> IssueClaim:
    """An unclaimed issue (or, with `state=`, one forced into that state)."""
    state = fields.pop("state", None)
    claim = IssueClaim.objects.create(
        repository=repository or make_repository(),
        number=number or next(_numbers),
        title=fields.pop("title", "Add user authentication"),
        **fields,
    )
    if state:
        put_claim_in_state(claim, state)
    return claim


def claimed(
    repository: Repository | None = None, session_id: str = "session_1", **fields
) -> IssueClaim:
    """A claim just taken by `session_id` through the real claiming path."""
    claim = make_claim(repository, **fields)
    taken = IssueClaim.objects.claim(claim.repository, claim.number, session_id)
    assert taken is not None
    return taken


def put_claim_in_state(claim: IssueClaim, state: str, **fields) -> IssueClaim:
    """Force a state for a test, bypassing transitions (tests only)."""
    IssueClaim.objects.filter(pk=claim.pk)._update_with_version(state=state, **fields)
    claim.refresh_from_db()
    return claim


def backdate(claim: IssueClaim, moment: datetime) -> IssueClaim:
    """Make the claim's TTL run out at `moment` (tests only)."""
    IssueClaim.objects.filter(pk=claim.pk)._update_with_version(expires_at=moment)
    claim.refresh_from_db()
    return claim


def make_backlog_run(repository: Repository | None = None, **fields) -> BacklogRun:
    return BacklogRun.objects.create(
        repository=repository or make_repository(), **fields
    )


def make_project(repository: Repository | None = None, **fields) -> GitHubProject:
    n = next(_numbers)
    values = {
        "project_id": f"PVT_kwDOABC{n}",
        "project_number": 1,
        "status_field_id": f"PVTSSF_abc{n}",
        "todo_option_id": "98f5c",
        "in_progress_option_id": "47d3e",
        "done_option_id": "f7a2b",
    }
    values.update(fields)
    return GitHubProject.objects.create(
        repository=repository or make_repository(), **values
    )


def make_board_item(
    project: GitHubProject | None = None,
    issue_number: int | None = None,
    item_id: str | None = None,
) -> BoardItem:
    number = issue_number or next(_numbers)
    return BoardItem.objects.add(
        project or make_project(), number, item_id or f"PVTI_{number}", by="test"
    )
