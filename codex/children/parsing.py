"""Reading a child agent's status comment (docs/domain/fan-out.md#child-reports).

Pure functions: no database, no clock. A comment is a child report only when it
carries the marker "🤖 Child" followed by one child id (`C\\d+`); anything else is
ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codex.children.choices import StatusType

MARKER = "🤖 Child"
CHILD_ID_PATTERN = r"^C[0-9]+$"
CHILD_ID_MAX_LENGTH = 20
# ASCII digits only: `\d` would also accept "C١" or full-width "C１".
_CHILD_ID = re.compile(
    re.escape(MARKER) + rf"\s+(C[0-9]{{1,{CHILD_ID_MAX_LENGTH - 1}}})\b"
)
_PR_NUMBER = re.compile(r"PR #([0-9]+)")
# The largest value a PositiveIntegerField holds on every supported database.
MAX_PR_NUMBER = 2_147_483_647
_FAILURE_KEYWORD = re.compile(r"(?:failed|error)\w*", re.IGNORECASE)
_REASON_LEAD = " \t:;,.-–—"
FAILURE_REASON_MAX_LENGTH = 500


@dataclass(frozen=True)
class ChildReportData:
    """What one marked comment says: who reported, how it went, and the details."""

    child_id: str
    status_type: str
    pr_number: int | None = None
    failure_reason: str = ""
    critical: bool = False


def detect_status_type(comment_body: str) -> str:
    """The status rules of docs/domain/fan-out.md#child-reports, exactly: the first
    rule that matches wins.

    Their exact semantics are kept on purpose: "PR #" is case-sensitive,
    the keywords are substrings ("incomplete" contains "complete"), and a
    completion without "PR #" falls through to the later rules.
    """
    lowered = comment_body.lower()
    if "complete" in lowered and "PR #" in comment_body:
        return StatusType.SUCCESS.value
    if "failed" in lowered or "error" in lowered:
        return StatusType.FAILURE.value
    if "partial" in lowered or "mostly" in lowered:
        return StatusType.PARTIAL.value
    return StatusType.AMBIGUOUS.value


def extract_child_id(comment_body: str) -> str | None:
    """The one child id after the marker; None without a marker or with markers
    naming different children (such a comment cannot be attributed to one child,
    and counting it for any of them could overwrite that child's real report)."""
    if MARKER not in comment_body:
        return None
    ids = set(_CHILD_ID.findall(comment_body))
    if len(ids) != 1:
        return None
    return ids.pop()


def extract_pr_number(comment_body: str) -> int | None:
    """The first "PR #<n>" with 0 < n ≤ MAX_PR_NUMBER, else None."""
    for match in _PR_NUMBER.finditer(comment_body):
        digits = match.group(1)
        # Checked before int(): a hostile 10,000-digit number would raise.
        if len(digits) > len(str(MAX_PR_NUMBER)):
            continue
        number = int(digits)
        if 0 < number <= MAX_PR_NUMBER:
            return number
    return None


def extract_failure_reason(comment_body: str) -> str:
    """The failure description: what follows the first "failed"/"error" on its
    line ("🤖 Child C2 failed: dependency conflicts" → "dependency conflicts"),
    else the next non-empty line, else the line itself without the marker.

    A FAILURE should carry its reason, so this never returns an empty string for
    a non-blank body.
    """
    match = _FAILURE_KEYWORD.search(comment_body)
    lines = comment_body.splitlines() or [comment_body]
    if match is None:
        reason = _without_marker(lines[0])
    else:
        line_end = comment_body.find("\n", match.end())
        line_end = len(comment_body) if line_end == -1 else line_end
        reason = comment_body[match.end() : line_end].strip().lstrip(_REASON_LEAD)
        if not reason:
            following = comment_body[line_end:].splitlines()
            reason = next((line.strip() for line in following if line.strip()), "")
        if not reason:
            line_start = comment_body.rfind("\n", 0, match.start()) + 1
            reason = _without_marker(comment_body[line_start:line_end])
    reason = reason.strip()
    if len(reason) > FAILURE_REASON_MAX_LENGTH:
        reason = reason[: FAILURE_REASON_MAX_LENGTH - 1].rstrip() + "…"
    return reason


def _without_marker(line: str) -> str:
    return _CHILD_ID.sub("", line).replace(MARKER, "").strip().lstrip(_REASON_LEAD)


def parse_child_report(body: str) -> ChildReportData | None:
    """Read a GitHub comment as a child report, or None when it is not one.

    None when: the marker "🤖 Child" is missing, no valid child id (`C\\d+`,
    ASCII digits) follows it, or markers name different children. Otherwise the
    status comes from `detect_status_type` (AMBIGUOUS when no rule matches), the
    pull request from the first "PR #<n>", and a FAILURE's reason from the text.
    """
    if not isinstance(body, str):
        return None
    child_id = extract_child_id(body)
    if child_id is None:
        return None
    status_type = detect_status_type(body)
    return ChildReportData(
        child_id=child_id,
        status_type=status_type,
        pr_number=extract_pr_number(body),
        failure_reason=(
            extract_failure_reason(body) if status_type == StatusType.FAILURE else ""
        ),
        critical=is_critical(body, status_type),
    )


def is_critical(comment_body: str, status_type: str) -> bool:
    """A FAILURE whose comment calls itself critical (see decision.decide)."""
    return status_type == StatusType.FAILURE and "critical" in comment_body.lower()
