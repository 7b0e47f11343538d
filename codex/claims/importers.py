"""Importing `.issue_claims.json` and `.github_project.json`
(docs/domain/claims.md#claims-import).

Each import validates the whole file first and reports every problem with the
line it is on; only a file without problems is written, in one transaction.
Timestamps without an offset (000 writes `datetime.now().isoformat()`) are read
in Codex's TIME_ZONE.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from codex.claims.models import (
    CLAIM_MAX_FAILURES,
    BoardItem,
    BoardStatus,
    ClaimState,
    IssueClaim,
    claim_ttl,
)
from codex.claims.models.claim import subject_for
from codex.core.imports import MAX_WHOLE_NUMBER, control_character, shorten
from codex.events.models import Event, EventKind
from codex.github.models import GitHubProject
from codex.repositories.models import Repository

BOARD_STATUS_BY_NAME = {choice.label: choice.value for choice in BoardStatus}


class ImportProblems(Exception):
    """The file cannot be imported; `problems` lists each one, with its line."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass
class _Reader:
    """Finds where keys are in the raw text, and collects problems."""

    text: str
    problems: list[str] = field(default_factory=list)

    def line_of(self, key: str, after: int = 0) -> int:
        match = re.compile(rf'"{re.escape(key)}"\s*:').search(self.text, after)
        return self.text.count("\n", 0, match.start()) + 1 if match else 1

    def offset_of(self, key: str) -> int:
        match = re.compile(rf'"{re.escape(key)}"\s*:').search(self.text)
        return match.start() if match else 0

    def problem(self, line: int, message: str) -> None:
        self.problems.append(f"line {line}: {message}")

    def load(self) -> Any:
        try:
            return json.loads(self.text)
        except json.JSONDecodeError as exc:
            self.problem(exc.lineno, f"not valid JSON: {exc.msg} (column {exc.colno})")
            raise ImportProblems(self.problems) from None
        except RecursionError:
            self.problem(1, "not valid JSON: nested too deeply")
            raise ImportProblems(self.problems) from None

    def issue_number(self, key: str, line: int, where: str) -> int | None:
        if not (key.isascii() and key.isdigit()) or not 1 <= int(key) <= (
            MAX_WHOLE_NUMBER
        ):
            self.problem(line, f"{where} key {shorten(key)} is not an issue number")
            return None
        return int(key)

    def timestamp(
        self, entry: dict, name: str, line: int, where: str, *, required: bool
    ) -> datetime | None:
        value = entry.get(name)
        if value is None:
            if required:
                self.problem(line, f"{where}: {name} is required")
            return None
        try:
            moment = datetime.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            moment = None
        if moment is None:
            self.problem(
                line, f"{where}: {name} {shorten(value)} is not an ISO 8601 datetime"
            )
            return None
        if not 1970 <= moment.year <= 9000:
            self.problem(line, f"{where}: {name} {shorten(value)} is out of range")
            return None
        if timezone.is_naive(moment):
            moment = timezone.make_aware(moment)
        return moment

    def count(
        self,
        entry: dict,
        name: str,
        line: int,
        where: str,
        default=None,
        maximum: int = MAX_WHOLE_NUMBER,
    ):
        value = entry.get(name, default)
        if (
            not isinstance(value, int)
            or isinstance(value, bool)
            or not 0 <= value <= maximum
        ):
            self.problem(
                line,
                f"{where}: {name} must be a whole number >= 0 (at most {maximum}), "
                f"not {shorten(value)}",
            )
            return None
        return value

    def text_field(
        self,
        entry: dict,
        name: str,
        line: int,
        where: str,
        *,
        required: bool,
        max_length: int | None = 200,
    ) -> str | None:
        value = entry.get(name)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or (required and not value.strip()):
            kind = "a non-empty string" if required else "a string"
            self.problem(line, f"{where}: {name} must be {kind}")
            return None
        if not self.clean_text(value, line, f"{where}: {name}"):
            return None
        if max_length is not None and len(value) > max_length:
            self.problem(
                line, f"{where}: {name} is longer than {max_length} characters"
            )
            return None
        return value

    def clean_text(self, value: str, line: int, what: str) -> bool:
        """False (with a problem) when `value` holds a control character."""
        found = control_character(value)
        if found:
            self.problem(line, f"{what} contains the control character {found}")
        return found is None


# -- .issue_claims.json -----------------------------------------------------------


def read_issue_claims(text: str) -> dict[int, dict[str, Any]]:
    """Validate a `.issue_claims.json` (docs/domain/claims.md#claims-import, with
    its optional `history`); return the values to store per issue number.

    The later fields (`failed_at`, `failure_count`) may be absent from an older
    file: failure_count is 0 and failed_at empty then. The
    state follows the entry: blocked at 3+ failures, failed when it has
    `failed_at`, otherwise claimed; issues only in `history` are unclaimed.
    """
    reader = _Reader(text)
    data = reader.load()
    if not isinstance(data, dict):
        raise ImportProblems(["line 1: the file must hold one JSON object"])
    history = data.get("history", {})
    rows: dict[int, dict[str, Any]] = {}
    history_at = reader.offset_of("history") if "history" in data else len(text)
    for key, entry in data.items():
        if key == "history":
            continue
        line = reader.line_of(key)
        number = reader.issue_number(key, line, "claim")
        if number is None:
            continue
        where = f"issue {key}"
        if not isinstance(entry, dict):
            reader.problem(line, f"{where}: must be an object")
            continue
        session = reader.text_field(entry, "session_id", line, where, required=True)
        claimed_at = reader.timestamp(entry, "claimed_at", line, where, required=True)
        if "title" not in entry:
            reader.problem(line, f"{where}: title is required")
        title = reader.text_field(
            entry, "title", line, where, required=False, max_length=None
        )
        failed_at = reader.timestamp(entry, "failed_at", line, where, required=False)
        failures = reader.count(
            entry, "failure_count", line, where, default=0, maximum=32767
        )
        if None in (session, claimed_at, title, failures):
            continue
        if failures >= CLAIM_MAX_FAILURES:
            state, expires_at = ClaimState.BLOCKED, None
        elif failed_at is not None:
            state, expires_at = ClaimState.FAILED, failed_at + claim_ttl()
        else:
            state, expires_at = ClaimState.CLAIMED, claimed_at + claim_ttl()
        rows[number] = {
            "title": title[:300],
            "state": state,
            "claimed_by": session,
            "claimed_at": claimed_at,
            "expires_at": expires_at,
            "failed_at": failed_at,
            "failure_count": failures,
            "total_attempts": 1,
            "successful_closes": 0,
            "failure_reasons": [],
            "last_session": session,
        }
    if not isinstance(history, dict):
        reader.problem(reader.line_of("history"), "history must be an object")
        history = {}
    for key, entry in history.items():
        line = reader.line_of(key, after=history_at)
        number = reader.issue_number(key, line, "history")
        if number is None:
            continue
        where = f"history of issue {key}"
        if not isinstance(entry, dict):
            reader.problem(line, f"{where}: must be an object")
            continue
        attempts = reader.count(entry, "total_attempts", line, where)
        closes = reader.count(entry, "successful_closes", line, where)
        reasons = entry.get("failure_reasons", [])
        if not isinstance(reasons, list) or not all(
            isinstance(reason, str) for reason in reasons
        ):
            reader.problem(line, f"{where}: failure_reasons must be a list of strings")
            continue
        if not all(
            reader.clean_text(reason, line, f"{where}: failure_reasons")
            for reason in reasons
        ):
            continue
        last = reader.text_field(entry, "last_session", line, where, required=False)
        if None in (attempts, closes, last):
            continue
        row = rows.setdefault(
            number,
            {
                "state": ClaimState.UNCLAIMED,
                "claimed_by": "",
                "claimed_at": None,
                "expires_at": None,
                "failed_at": None,
                "failure_count": 0,
                "last_session": last,
            },
        )
        # The history entry's last_session is the file's own record of the
        # last attempt (docs/domain/claims.md): kept as written; the claim's
        # session stands only where the history names none.
        row["last_session"] = last or row["last_session"]
        row.update(
            total_attempts=max(attempts, 1 if row["claimed_by"] else 0),
            successful_closes=closes,
            failure_reasons=reasons,
        )
    if reader.problems:
        raise ImportProblems(reader.problems)
    return rows


def import_issue_claims(repository: Repository, text: str, *, by: str) -> int:
    """Validate, then write every claim of the file for `repository` (creating
    or replacing rows), with one event each. Returns the number imported.
    Raises ImportProblems, writing nothing, when any entry is bad."""
    rows = read_issue_claims(text)
    with transaction.atomic():
        existing = {
            claim.number: claim
            for claim in IssueClaim.objects.select_for_update().filter(
                repository=repository, number__in=list(rows)
            )
        }
        events = []
        for number, values in sorted(rows.items()):
            previous = existing.get(number)
            if previous is None:
                IssueClaim.objects.create(
                    repository=repository, number=number, **values
                )
            else:
                values = {**values, "title": values.get("title") or previous.title}
                IssueClaim.objects.filter(pk=previous.pk)._update_with_version(**values)
            events.append(
                Event(
                    kind=EventKind.CLAIM,
                    subject=subject_for(repository, number),
                    actor=by,
                    reason="imported from .issue_claims.json",
                    field="state",
                    source=previous.state if previous else "",
                    target=values["state"],
                    data={"transition": "import", "session_id": values["claimed_by"]},
                )
            )
        Event.objects.bulk_create(events)
    return len(rows)


# -- .github_project.json ---------------------------------------------------------


def read_github_project(text: str) -> tuple[dict[str, Any], dict[int, dict]]:
    """Validate a `.github_project.json` (docs/domain/claims.md#claims-import);
    return the project's values and the items' values by issue number. A file
    without `items` (the older format) has no items."""
    reader = _Reader(text)
    data = reader.load()
    if not isinstance(data, dict):
        raise ImportProblems(["line 1: the file must hold one JSON object"])
    project: dict[str, Any] = {}
    for name in ("project_id", "status_field_id"):
        value = reader.text_field(
            data, name, reader.line_of(name), "project", required=True, max_length=100
        )
        project[name] = value
    number = data.get("project_number")
    if (
        not isinstance(number, int)
        or isinstance(number, bool)
        or not 1 <= number <= MAX_WHOLE_NUMBER
    ):
        reader.problem(
            reader.line_of("project_number"),
            f"project: project_number must be a whole number >= 1 (at most "
            f"{MAX_WHOLE_NUMBER}), not {shorten(number)}",
        )
    project["project_number"] = number
    options = data.get("status_options")
    options_line = reader.line_of("status_options")
    if not isinstance(options, dict):
        reader.problem(options_line, "project: status_options must be an object")
        options = {}
    for label, attribute in (
        ("Todo", "todo_option_id"),
        ("In Progress", "in_progress_option_id"),
        ("Done", "done_option_id"),
    ):
        value = options.get(label)
        if not isinstance(value, str) or not value or len(value) > 100:
            reader.problem(
                options_line, f"status_options: {label!r} must be an option id"
            )
        elif not reader.clean_text(value, options_line, f"status_options: {label}"):
            value = None
        project[attribute] = value
    items = data.get("items", {})
    items_at = reader.offset_of("items") if "items" in data else len(text)
    if not isinstance(items, dict):
        reader.problem(reader.line_of("items"), "items must be an object")
        items = {}
    rows: dict[int, dict] = {}
    seen_item_ids: dict[str, str] = {}
    for key, entry in items.items():
        line = reader.line_of(key, after=items_at)
        issue = reader.issue_number(key, line, "items")
        if issue is None:
            continue
        where = f"item {key}"
        if not isinstance(entry, dict):
            reader.problem(line, f"{where}: must be an object")
            continue
        item_id = reader.text_field(
            entry, "item_id", line, where, required=True, max_length=100
        )
        raw_status = entry.get("status")
        status = (
            BOARD_STATUS_BY_NAME.get(raw_status)
            if isinstance(raw_status, str)
            else None
        )
        if status is None:
            reader.problem(
                line,
                f"{where}: status {shorten(raw_status)} is not one of "
                "Todo, In Progress, Done",
            )
        added_at = reader.timestamp(entry, "added_at", line, where, required=True)
        updated_at = reader.timestamp(entry, "updated_at", line, where, required=False)
        if item_id and item_id in seen_item_ids:
            reader.problem(
                line,
                f"{where}: item_id {item_id!r} is also item {seen_item_ids[item_id]}",
            )
            continue
        if item_id:
            seen_item_ids[item_id] = key
        if None in (item_id, status, added_at):
            continue
        rows[issue] = {
            "item_id": item_id,
            "status": status,
            "added_at": added_at,
            "status_updated_at": updated_at,
        }
    if reader.problems:
        raise ImportProblems(reader.problems)
    return project, rows


def import_github_project(
    repository: Repository, text: str, *, by: str
) -> tuple[GitHubProject, int]:
    """Validate, then write the board and its items for `repository`.
    Returns the project and the number of items imported. Raises
    ImportProblems, writing nothing, when anything is bad (including ids that
    already belong to another repository's board or another issue)."""
    values, rows = read_github_project(text)
    clashes = []
    other = (
        GitHubProject.objects.filter(project_id=values["project_id"])
        .exclude(repository=repository)
        .select_related("repository")
        .first()
    )
    if other:
        clashes.append(
            f"project_id {values['project_id']!r} is already the board of "
            f"{other.repository}"
        )
    by_item_id = {row["item_id"]: number for number, row in rows.items()}
    for item in BoardItem.objects.filter(item_id__in=list(by_item_id)).select_related(
        "project__repository"
    ):
        number = by_item_id[item.item_id]
        if item.project.repository_id != repository.pk or item.issue_number != number:
            clashes.append(
                f"item {number}: item_id {item.item_id!r} already belongs to "
                f"{item.project.repository}#{item.issue_number}"
            )
    if clashes:
        raise ImportProblems(clashes)
    with transaction.atomic():
        project, _ = GitHubProject.objects.update_or_create(
            repository=repository, defaults=values
        )
        existing = {
            item.issue_number: item
            for item in BoardItem.objects.select_for_update().filter(
                project=project, issue_number__in=list(rows)
            )
        }
        events = []
        subject = f"board:{repository.full_name}#"
        for number, row in sorted(rows.items()):
            previous = existing.get(number)
            if previous is None:
                BoardItem.objects.create(project=project, issue_number=number, **row)
            else:
                BoardItem.objects.filter(pk=previous.pk)._update_with_version(**row)
            events.append(
                Event(
                    kind=EventKind.CLAIM,
                    subject=f"{subject}{number}",
                    actor=by,
                    reason="imported from .github_project.json",
                    field="board_status",
                    source=previous.status if previous else "",
                    target=row["status"],
                    data={"transition": "import", "item_id": row["item_id"]},
                )
            )
        Event.objects.bulk_create(events)
    return project, len(rows)
