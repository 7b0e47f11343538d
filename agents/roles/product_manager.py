"""Product manager (intake): triage the request and write spec.md, or ask
for clarification, or decline to proceed.

The triage is recorded as the task's Triage (type, scope, complexity,
should_proceed and the reason when not); its labels are put on the task's
issue (`after_triage`). A request the product manager declines stops the
task, and the issue says why."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from agents.repo_map.prompt import warm_in_background
from agents.roles.base import COMMON_RULES, Role, RoleContext, Step, string_list
from agents.roles.reviewer import inert
from codex.core.errors import ClassifiedFailure
from codex.core.store import SideEffectUncertain, perform_once
from codex.tasks.models.analysis import Complexity, Scope, Triage, TriageType
from codex.tasks.runners import PhaseResult
from codex.tasks.speckit import complete_spec
from integrations.github.forge import IssueGone

if TYPE_CHECKING:
    from codex.repositories.forge import Forge
    from codex.tasks.models import Task

DECLINED = "the product manager advises not to proceed"
# An issue label: short, no markup.
LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._:/-]{0,48}$"
_LABEL = re.compile(LABEL_PATTERN)

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
- or, when it should not be done at all (out of scope for the repository,
  harmful, a duplicate), set should_proceed to false with the reason: the
  task stops and the reason is posted on the issue.

Always fill triage: type (BUG_FIX, NEW_FEATURE, REFACTOR_STYLE), scope (SMALL,
MEDIUM, LARGE), complexity (simple, moderate, complex) and labels for the
issue (a few short ones, e.g. enhancement, bug, docs).

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
                "type": {"type": "string", "enum": list(TriageType.values)},
                "scope": {"type": "string", "enum": list(Scope.values)},
                "complexity": {"type": "string", "enum": list(Complexity.values)},
                "labels": {
                    "type": "array",
                    "items": {"type": "string", "pattern": LABEL_PATTERN},
                    "maxItems": 5,
                },
            },
        },
        "spec_md": {"type": "string"},
        "reason": {"type": "string"},
    },
    "required": ["should_proceed", "needs_clarification", "spec_md"],
}

INSTRUCTIONS = "Write the specification (spec_md) for this request."


def record_triage(result: dict[str, Any], context: RoleContext) -> Triage:
    """The task's Triage from the submitted result (once per task: a rerun
    of intake replaces it)."""
    triage = result.get("triage") or {}
    proceed = bool(result["should_proceed"])
    reason = "" if proceed else (result.get("reason") or "").strip() or DECLINED
    record, _ = Triage.objects.update_or_create(
        task=context.task,
        defaults={
            "type": triage.get("type") or TriageType.NEW_FEATURE,
            "scope": triage.get("scope") or Scope.MEDIUM,
            "complexity": triage.get("complexity") or Complexity.MODERATE,
            "should_proceed": proceed,
            "rejection_reason": reason,
            "completed_at": timezone.now(),
        },
    )
    context.extra["labels"] = sorted(
        {str(label) for label in triage.get("labels") or [] if _LABEL.match(str(label))}
    )
    return record


def to_phase_result(result: dict[str, Any], context: RoleContext) -> PhaseResult:
    triage = record_triage(result, context)
    if not triage.should_proceed:
        # Stopped on purpose; the runner posts the reason on the issue.
        context.extra["declined"] = triage.rejection_reason
        return PhaseResult.failed(
            f"the product manager declined the request: {triage.rejection_reason}"
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


def after_triage(task: Task, forge: Forge, context: RoleContext) -> None:
    """The triage on the issue: its labels added, and when the product manager
    declined the request, a comment saying why (each at most once). A forge
    failure here is recorded and does not undo the triage."""
    if not task.issue_number:
        return
    labels = context.extra.get("labels") or []
    declined = context.extra.get("declined") or ""
    repository, issue = task.repository, task.issue_number
    try:
        if labels:
            perform_once(
                f"issue:labels:{repository.pk}:{issue}:{task.task_id}",
                lambda: (forge.add_labels(issue, list(labels)), {"labels": labels})[1],
                lookup=lambda: None,  # adding labels again changes nothing
                task=task,
                kind="issue",
            )
            task.record(
                "tool",
                by="agent:product_manager",
                reason=f"labels added to issue #{issue}: {', '.join(labels)}",
                data={"tool": "add_labels", "success": True, "labels": labels},
            )
        if declined:
            marker = f"<!-- codex:declined:{task.task_id} -->"
            body = f"Codex will not work on this request: {inert(declined)}\n\n{marker}"
            perform_once(
                f"issue:declined:{repository.pk}:{issue}:{task.task_id}",
                lambda: dict(forge.comment(issue, body)),
                lookup=lambda: (
                    None
                    if (found := forge.find_comment(issue, marker)) is None
                    else dict(found)
                ),
                task=task,
                kind="issue",
            )
    except (ClassifiedFailure, SideEffectUncertain, IssueGone) as exc:
        task.record(
            "tool",
            by="agent:product_manager",
            reason=f"the triage could not be put on the issue: {exc}"[:2000],
            data={"tool": "add_labels", "success": False},
        )


class ProductManager(Role):
    """The intake phase: the triage, also put on the task's issue."""

    def prepare(self, step: Step) -> str:
        # The planner's repository map is built while the triage runs.
        warm_in_background(step)
        return ""

    def finish(self, step: Step, submitted: dict[str, Any]) -> PhaseResult:
        result = self.to_phase_result(submitted, step.context)
        after_triage(step.task, step.forge, step.context)
        return result


ROLE = ProductManager(
    name="product_manager",
    phase="intake",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
)
