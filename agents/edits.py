"""What an edit does to a file's text, and what the agent is shown of it.

`apply_edits` applies (old, new) replacements in order, all or none: the
first that does not apply is the reason nothing changed. `change_report`
answers a write: a numbered snippet of the new file around each changed
region, then the syntax check of the languages agents.syntax parses.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from agents import syntax
from agents.tools import ToolError

# Lines of context shown around a change.
CONTEXT_LINES = 3
# A snippet shows at most this many lines (the change's start first).
MAX_SNIPPET_LINES = 60
# Longer lines are cut in a snippet.
MAX_SNIPPET_LINE_CHARS = 300
# Above this many differing lines the changed region is not diffed further
# (difflib is quadratic at worst): it is shown as one block.
MAX_DIFFED_LINES = 4000


@dataclass(frozen=True)
class Edit:
    """One replacement: `old` (non-empty) by `new`, once or everywhere."""

    old: str
    new: str
    replace_all: bool = False


def apply_edits(text: str, edits: Sequence[Edit]) -> tuple[str, int]:
    """`text` with `edits` applied in order, each to the result of the one
    before; the number of replacements made. ToolError names the first edit
    that does not apply, and then none applies."""
    crlf = "\r\n" in text
    replaced = 0
    for number, edit in enumerate(edits, 1):
        where = f"edit {number} of {len(edits)}: " if len(edits) > 1 else ""
        old, new = edit.old, edit.new
        if not old:
            raise ToolError(f"{where}old must be a non-empty string")
        if "\x00" in new:
            raise ToolError(f"{where}new contains a NUL byte")
        # The file's own line endings: CRLF stays CRLF.
        if crlf and "\r\n" not in old:
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
        if count == 0:
            raise ToolError(
                f"{where}old was not found in the file"
                + ("" if number == 1 else " (after the edits before it)")
                + "; read it and retry"
            )
        if count > 1 and not edit.replace_all:
            raise ToolError(
                f"{where}old occurs {count} times; include more context to make "
                "it unique, or set replace_all to replace every occurrence"
            )
        text = text.replace(old, new) if edit.replace_all else text.replace(old, new, 1)
        replaced += count if edit.replace_all else 1
    return text, replaced


def changed_lines(before: str, after: str) -> list[tuple[int, int]]:
    """The 1-based line ranges of `after` that differ from `before` (a
    deletion is the line where it was)."""
    old = before.splitlines()
    new = after.splitlines()
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(old), len(new)) - prefix
        and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]
    ):
        suffix += 1
    middle_old = old[prefix : len(old) - suffix]
    middle_new = new[prefix : len(new) - suffix]
    if not middle_old and not middle_new:
        if before == after:
            return []
        # Only the line endings or the last newline changed.
        last = max(1, len(new))
        return [(last, last)]
    if max(len(middle_old), len(middle_new)) > MAX_DIFFED_LINES:
        return [_span(prefix, len(middle_new), len(new))]
    matcher = difflib.SequenceMatcher(None, middle_old, middle_new, autojunk=False)
    return [
        _span(prefix + j1, j2 - j1, len(new))
        for tag, _i1, _i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _span(start: int, length: int, total: int) -> tuple[int, int]:
    """Lines start+1 .. start+length (at least one line, within the file)."""
    first = min(start + 1, max(total, 1))
    return first, max(first, min(start + length, max(total, 1)))


def snippet(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The lines of `text` in `spans` with CONTEXT_LINES around them,
    numbered as read_file numbers them, "..." between distant parts."""
    lines = text.splitlines()
    if not lines:
        return "(the file is empty)"
    windows: list[list[int]] = []
    for first, last in sorted(spans):
        low = max(1, first - CONTEXT_LINES)
        high = min(len(lines), last + CONTEXT_LINES)
        if windows and low <= windows[-1][1] + 1:
            windows[-1][1] = max(windows[-1][1], high)
        else:
            windows.append([low, high])
    shown: list[str] = []
    for low, high in windows:
        if shown:
            shown.append("...")
        for number in range(low, high + 1):
            if len(shown) >= MAX_SNIPPET_LINES:
                rest = len(lines) - number + 1
                shown.append(
                    f"[... snippet stopped at line {number}; {rest} more lines in "
                    "the file: read_file to see them]"
                )
                return "\n".join(shown)
            line = lines[number - 1]
            if len(line) > MAX_SNIPPET_LINE_CHARS:
                line = line[:MAX_SNIPPET_LINE_CHARS] + " [line cut]"
            shown.append(f"{number}\t{line}")
    return "\n".join(shown)


def change_report(path: str, before: str | None, after: str) -> str:
    """What follows "wrote X" or "edited X": the snippet of the change and
    the syntax check. `before` None: a new file (its beginning is shown)."""
    if before is None:
        spans = [(1, min(len(after.splitlines()), MAX_SNIPPET_LINES))]
    else:
        spans = changed_lines(before, after)
    parts = [snippet(after, spans) if spans else "(no change: the file was the same)"]
    verdict = syntax_verdict(path, after)
    if verdict:
        parts.append(verdict)
    return "\n".join(parts)


def syntax_verdict(path: str, text: str) -> str:
    """The syntax check's line(s) for the answer, "" for unparsed languages."""
    language = syntax.language_for(PurePath(path))
    if language is None:
        return ""
    problems = syntax.check(path, text.encode("utf-8"))
    if not problems:
        return f"syntax check ({language}): no errors"
    listed = "\n".join(problem.describe() for problem in problems)
    return (
        f"syntax check ({language}): {len(problems)} problem"
        f"{'s' if len(problems) > 1 else ''} (the file is kept as written; fix "
        f"it with another edit):\n{listed}"
    )
