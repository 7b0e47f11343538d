"""What QA and the reviewer read about the change: its diff against the base
branch (the start in the prompt, the whole of it through the read_diff
tool, file by file or page by page), and for the reviewer QA's results (the
real checks, pre-existing failures, each criterion).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.prompts import untrusted
from agents.tools import Tool, ToolError, _schema
from integrations.git import run_git

if TYPE_CHECKING:
    from codex.tasks.models import Task

PROMPT_DIFF_CHARS = 60_000
PAGE_CHARS = 40_000


def base_ref(task: Task) -> str:
    return f"origin/{task.repository.default_branch}"


def diff_text(worktree: Path, base: str, path: str = "") -> str:
    """The branch's diff against where it left `base` (optionally one path)."""
    args = ["diff", f"{base}...HEAD"]
    if path:
        args += ["--", path]
    return run_git(args, worktree)


def diff_prompt(worktree: Path, base: str) -> str:
    """The change for the prompt: the files it touches, then its diff, the
    start of it when it is long (read_diff pages through the rest)."""
    stat = run_git(["diff", "--stat", f"{base}...HEAD"], worktree)
    diff = diff_text(worktree, base)
    note = ""
    if len(diff) > PROMPT_DIFF_CHARS:
        note = (
            f"\n[the first {PROMPT_DIFF_CHARS} of {len(diff)} characters; read "
            "the rest with read_diff (by path, or by offset)]"
        )
        diff = diff[:PROMPT_DIFF_CHARS]
    return (
        "The files the pull request changes:\n"
        + untrusted("diff --stat", stat, raw=True)
        + "\n\nThe pull request's diff against the base branch:\n"
        + untrusted("pull request diff", diff, raw=True)
        + note
    )


def diff_tool(worktree: Path, base: str) -> Tool:
    """read_diff(path?, offset?): the whole diff, a page at a time."""

    def read_diff(arguments: dict[str, Any]) -> str:
        text = diff_text(worktree, base, arguments.get("path") or "")
        if not text:
            raise ToolError("no change there against the base branch")
        offset = int(arguments.get("offset") or 0)
        if offset >= len(text):
            raise ToolError(f"offset past the end ({len(text)} characters)")
        page = text[offset : offset + PAGE_CHARS]
        end = offset + len(page)
        more = (
            f"\n[characters {offset}-{end} of {len(text)}; next: offset={end}]"
            if end < len(text)
            else ""
        )
        return page + more

    return Tool(
        "read_diff",
        "Read the pull request's diff against the base branch: all of it, or "
        f"one path; {PAGE_CHARS} characters a page from `offset`.",
        _schema(
            {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 0},
            }
        ),
        read_diff,
    )


def qa_results(task: Task) -> str:
    """The newest verification report, for the reviewer."""
    from codex.tasks.models import VerificationReport

    report = (
        VerificationReport.objects.filter(task=task).order_by("-cycle", "-id").first()
    )
    if report is None:
        return ""
    lines = [
        f"QA's results (verification cycle {report.cycle}): {report.recommendation}; "
        f"tests {report.tests_passed} passed, {report.tests_failed} failed, "
        f"{report.tests_skipped} skipped."
    ]
    for check in (report.feedback or {}).get("checks") or []:
        lines.append(
            f"- {check.get('kind')} `{check.get('command')}`: {check.get('status')}"
        )
    known = (report.feedback or {}).get("pre_existing_failures") or []
    if known:
        lines.append("Failing on the base branch already: " + ", ".join(known[:20]))
    for criterion in report.acceptance_criteria or []:
        lines.append(
            f"- criterion {criterion.get('criterion')}: {criterion.get('status')} "
            f"({criterion.get('evidence')})"
        )
    return untrusted("QA's verification report", "\n".join(lines))
