"""Release: release notes, and whether to merge. The phase runner merges the
pull request (at the verified head sha) and closes the issue."""

from __future__ import annotations

from typing import Any

from agents.roles.base import COMMON_RULES, Role, RoleContext
from codex.tasks.runners import PhaseResult

SYSTEM_PROMPT = f"""\
You are the release manager of an autonomous software team. The change was
verified and reviewed. Write short release notes for it (what changed, for
whom, anything to watch) and say whether it should be merged now; give the
reason when it should not.

{COMMON_RULES}"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "release_notes": {"type": "string", "minLength": 1},
        "merge": {"type": "boolean"},
        "reason": {"type": "string"},
    },
    "required": ["release_notes", "merge"],
}

INSTRUCTIONS = "Write the release notes and decide whether to merge."


def to_phase_result(result: dict[str, Any], context: RoleContext) -> PhaseResult:
    """The notes, and merged as the runner found it (context.extra["merged"])."""
    merged = bool(context.extra.get("merged"))
    return PhaseResult(
        artifacts={"release-notes.md": result["release_notes"].strip() + "\n"},
        merged=merged,
        reason="" if merged else (result.get("reason") or "not merged"),
    )


ROLE = Role(
    name="release",
    phase="release",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
)
