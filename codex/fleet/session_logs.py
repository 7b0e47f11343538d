"""Reading session logs (`logs/session_*.jsonl`) into agent runs
(docs/domain/fleet.md#session-logs).

Each non-blank line is one SessionOutcome. A line is accepted only when every
required field is present with its type and the validation rules hold;
the derived values in the file (productivity_score, health_status, warnings)
are checked or ignored, because Codex computes them from the counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codex.core.imports import (
    MAX_WHOLE_NUMBER,
    UnreadableFile,
    control_character,
    read_import_file,
    shorten,
)
from codex.fleet.models import AgentRun, HealthStatus, RunStatus
from codex.fleet.productivity import productivity_score

REQUIRED_FIELDS = (
    "session_id",
    "started_at",
    "ended_at",
    "issues_worked",
    "issues_closed",
    "files_changed",
    "tool_count",
    "productivity_score",
    "success",
    "health_status",
)
# Logs write scores rounded (0.33 for 15/45): they are compared to 2 places.
SCORE_TOLERANCE = 0.006


class BadLine(ValueError):
    """One session-log line that cannot be imported, and why."""


@dataclass
class SessionLine:
    """A valid line: where it came from and the run it becomes."""

    location: str
    run: AgentRun


def _iso(value: Any, name: str) -> datetime:
    if not isinstance(value, str):
        raise BadLine(f"{name} must be an ISO8601 string")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise BadLine(f"{name} is not ISO8601: {shorten(value)}") from None
    if not 1970 <= moment.year <= 9000:
        raise BadLine(f"{name} is out of range: {shorten(value)}")
    # Session logs carry times without a zone; Codex stores UTC.
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _count(value: Any, name: str) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 0 <= value <= MAX_WHOLE_NUMBER
    ):
        raise BadLine(
            f"{name} must be a whole number >= 0 (at most {MAX_WHOLE_NUMBER}), "
            f"not {shorten(value)}"
        )
    return value


def _text(value: str, name: str, max_length: int | None = None) -> str:
    found = control_character(value)
    if found:
        raise BadLine(f"{name} contains the control character {found}")
    if max_length is not None and len(value) > max_length:
        raise BadLine(f"{name} is longer than {max_length} characters")
    return value


def _issues(value: Any, name: str) -> list[int]:
    if not isinstance(value, list) or any(
        isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_WHOLE_NUMBER
        for n in value
    ):
        raise BadLine(f"{name} must be a list of issue numbers")
    return value


def parse_session_line(text: str, location: str = "") -> AgentRun:
    """The unsaved AgentRun of one SessionOutcome line; BadLine if it is bad."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadLine(f"not JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise BadLine("not JSON: nested too deeply") from None
    if not isinstance(record, dict):
        raise BadLine("not a JSON object")
    missing = [name for name in REQUIRED_FIELDS if name not in record]
    if missing:
        raise BadLine(f"missing {', '.join(missing)}")
    session_id = record["session_id"]
    if not isinstance(session_id, str) or not session_id.strip():
        raise BadLine("session_id must be a non-empty string")
    _text(session_id.strip(), "session_id", max_length=200)
    started_at = _iso(record["started_at"], "started_at")
    ended_at = _iso(record["ended_at"], "ended_at")
    if ended_at < started_at:
        raise BadLine("ended_at is before started_at")
    worked = _issues(record["issues_worked"], "issues_worked")
    closed = _issues(record["issues_closed"], "issues_closed")
    files_changed = _count(record["files_changed"], "files_changed")
    tool_count = _count(record["tool_count"], "tool_count")
    response_length = record.get("response_length")
    if response_length is not None:
        response_length = _count(response_length, "response_length")
    success = record["success"]
    if not isinstance(success, bool):
        raise BadLine("success must be true or false")
    if success != (len(closed) > 0):
        raise BadLine(
            "success must be true exactly when issues_closed is not empty "
            f"(success={json.dumps(success)}, {len(closed)} closed)"
        )
    score = record["productivity_score"]
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise BadLine("productivity_score must be a number")
    expected = productivity_score(
        issues_closed=len(set(closed)),
        files_changed=files_changed,
        tool_count=tool_count,
    )
    if abs(score - expected) > SCORE_TOLERANCE:
        raise BadLine(
            f"productivity_score {score} is not (issues_closed * 10 + "
            f"files_changed) / tool_count = {expected:.2f}"
        )
    health = record["health_status"]
    if health not in HealthStatus.values:
        raise BadLine(f"health_status must be one of {', '.join(HealthStatus.values)}")
    warnings = record.get("warnings", [])
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise BadLine("warnings must be a list of strings")
    for warning in warnings:
        _text(warning, "warnings")
    return AgentRun(
        session_id=session_id.strip(),
        # A session the old system judged unhealthy had failed; the rest ended.
        status=RunStatus.FAILED
        if health == HealthStatus.UNHEALTHY
        else RunStatus.SUCCEEDED,
        error="; ".join(warnings) if health == HealthStatus.UNHEALTHY else "",
        started_at=started_at,
        ended_at=ended_at,
        issues_worked=worked,
        closed_issues=closed,
        files_changed=files_changed,
        tool_count=tool_count,
        response_length=response_length,
        imported_from=location[:500],
    )


def read_session_logs(paths: list[Path]) -> tuple[list[SessionLine], list[str]]:
    """Every valid line of `paths` and every problem as "path:line: why".

    Lines end at newlines only: a JSON string may hold U+2028 or a form feed,
    which `str.splitlines` would take for line ends. A leading BOM is dropped."""
    lines: list[SessionLine] = []
    errors: list[str] = []
    first_seen: dict[str, str] = {}
    for path in paths:
        try:
            text = read_import_file(path)
        except UnreadableFile as exc:
            errors.append(f"{path}: cannot read: {exc}")
            continue
        for number, raw in enumerate(text.split("\n"), start=1):
            raw = raw.removesuffix("\r")
            if not raw.strip():
                continue
            location = f"{path}:{number}"
            try:
                run = parse_session_line(raw, location)
            except BadLine as exc:
                errors.append(f"{location}: {str(exc)[:300]}")
                continue
            if run.session_id in first_seen:
                errors.append(
                    f"{location}: session {run.session_id} already appears at "
                    f"{first_seen[run.session_id]}"
                )
                continue
            first_seen[run.session_id] = location
            lines.append(SessionLine(location=location, run=run))
    return lines, errors
