"""Product manager (intake): triage the request and write spec.md (spec 002
§4.1), or ask for clarification, or decline to proceed."""

from __future__ import annotations

from typing import Any

from agents.roles.base import COMMON_RULES, Role, RoleContext, string_list
from codex.tasks.runners import PhaseResult
from codex.tasks.speckit import complete_spec

SYSTEM_PROMPT = f"""\
You are the product manager of an autonomous software team. You turn a feature
request into a specification the planner and developer can work from.

Read the request and, where it helps, the repository. Then either:
- write spec.md in the SpecKit sections: "# Feature: <title>",
  "## User Stories" ("- As a <role>, I want <feature>, so that <benefit>"),
  "## Functional Requirements" ("1. FR1: ..."), "## Success Criteria"
  (testable, "- [ ] SC1: ..."), "## Edge Cases" ("- EC1: <case and expected
  behaviour>"); add "## Out of Scope" or "## Open Questions" when useful;
- or, when the request cannot be specified without answers, set
  needs_clarification with the questions to ask;
- or, when it should not be done at all, set should_proceed to false with the
  reason.

{COMMON_RULES}"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "should_proceed": {"type": "boolean"},
        "needs_clarification": {"type": "boolean"},
        "questions": string_list(),
        "triage": {
            "type": "object",
            "properties": {
                "type": {"type": "string"},
                "complexity": {"type": "string"},
            },
        },
        "spec_md": {"type": "string"},
        "reason": {"type": "string"},
    },
    "required": ["should_proceed", "needs_clarification", "spec_md"],
}

INSTRUCTIONS = "Write the specification (spec_md) for this request."


def to_phase_result(result: dict[str, Any], context: RoleContext) -> PhaseResult:
    if not result["should_proceed"]:
        return PhaseResult.escalate(
            result.get("reason") or "the product manager advises not to proceed"
        )
    if result["needs_clarification"]:
        return PhaseResult(
            needs_clarification=True,
            questions=list(result.get("questions") or []),
            reason=result.get("reason") or "the request needs clarification",
        )
    spec = result["spec_md"].strip()
    if spec:
        # Every SpecKit section is there, the request's criteria filling in.
        spec = complete_spec(
            spec,
            title=context.task.title,
            acceptance_criteria=context.task.acceptance_criteria,
        ).strip()
    if not spec:
        return PhaseResult.failed("the product manager submitted an empty spec.md")
    return PhaseResult(artifacts={"spec.md": spec + "\n"})


ROLE = Role(
    name="product_manager",
    phase="intake",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
)
