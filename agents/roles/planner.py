"""Planner (planning): plan.md, tasks.md (docs/domain/tasks.md#artifacts) and the
analysis the developer works from."""

from __future__ import annotations

import json
from typing import Any

from django.utils import timezone

from agents import people
from agents.roles.base import COMMON_RULES, Role, RoleContext, Step, string_list
from codex.tasks import speckit
from codex.tasks.models.analysis import Analysis
from codex.tasks.runners import PhaseResult

SYSTEM_PROMPT = f"""\
You are the planner of an autonomous software team. From spec.md and the
repository you write the implementation plan and break it into ordered,
individually committable tasks (at least one).

plan_md is plan.md in the SpecKit sections: "# Implementation Plan: <title>",
"## Technical Context" (language/version, dependencies), "## Implementation
Approach", "## Component Design". tasks lists the tasks in order, each with a
title, a description precise enough to implement without guessing, and its
files, tests and acceptance (when it is done). analysis names the
files to touch, the patterns to follow, the test requirement, what the
developer must do and must not do, and a short brief.

Only when the request is too big for one pull request, add split: 1 to 5
child requests (title, description, acceptance_criteria), each a pull
request of its own that can be merged alone; the children then do the work
and tasks lists them, one task per child.

{COMMON_RULES}"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "plan_md": {"type": "string", "minLength": 1},
        "tasks": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "minLength": 1},
                    "description": {"type": "string"},
                    "files": string_list(),
                    "tests": {"type": "string"},
                    "acceptance": {"type": "string"},
                },
                "required": ["title"],
            },
        },
        "analysis": {
            "type": "object",
            "properties": {
                # A path, or {path, purpose, action: create|modify|delete}.
                "files": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"type": "string"},
                            {
                                "type": "object",
                                "properties": {
                                    "path": {"type": "string"},
                                    "purpose": {"type": "string"},
                                    "action": {
                                        "type": "string",
                                        "enum": list(Analysis.FILE_ACTIONS),
                                    },
                                },
                                "required": ["path"],
                            },
                        ]
                    },
                },
                "patterns": string_list(),
                # A sentence, or {required, type, location, description}.
                "test_requirement": {"type": ["string", "object"]},
                "must_do": string_list(),
                "must_not_do": string_list(),
                "brief": {"type": "string"},
            },
        },
        "split": {
            "type": "array",
            "minItems": 1,
            "maxItems": 5,
            "items": {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "minLength": 1},
                    "description": {"type": "string"},
                    "acceptance_criteria": {"type": "string"},
                },
                "required": ["title"],
            },
        },
    },
    "required": ["plan_md", "tasks"],
}

INSTRUCTIONS = "Write the plan (plan_md), the tasks and the analysis."


def tasks_md(tasks: list[dict[str, Any]], title: str = "") -> str:
    """tasks.md in the SpecKit form (codex.tasks.speckit.tasks_md)."""
    return speckit.tasks_md(title, tasks)


def _files(files: list[Any]) -> list[dict[str, str]]:
    out = []
    for item in files or []:
        entry = {"path": item} if isinstance(item, str) else dict(item)
        out.append(
            {
                "path": str(entry.get("path") or ""),
                "purpose": str(entry.get("purpose") or ""),
                "action": entry.get("action") or "modify",
            }
        )
    return [entry for entry in out if entry["path"]]


def _test_requirement(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {"required": bool(value.get("required", True)), **value}
    return {"required": True, "description": str(value or "")}


def record_analysis(result: dict[str, Any], context: RoleContext) -> Analysis:
    """The task's Analysis (the analyst's brief for the writer) from the
    planner's result; a rerun of planning replaces it."""
    analysis = result.get("analysis") or {}
    brief = (analysis.get("brief") or "").strip() or result["plan_md"].strip()
    record, _ = Analysis.objects.update_or_create(
        task=context.task,
        defaults={
            "files": _files(analysis.get("files") or []),
            "patterns": [str(p) for p in analysis.get("patterns") or []],
            "test_requirement": _test_requirement(analysis.get("test_requirement")),
            "must_do": [str(p) for p in analysis.get("must_do") or []],
            "must_not_do": [str(p) for p in analysis.get("must_not_do") or []],
            "brief": brief,
            "completed_at": timezone.now(),
        },
    )
    return record


def to_phase_result(result: dict[str, Any], context: RoleContext) -> PhaseResult:
    record_analysis(result, context)
    tasks = result["tasks"]
    title = context.task.title
    artifacts = {
        "plan.md": speckit.complete_plan(result["plan_md"], title=title),
        "tasks.md": tasks_md(tasks, title),
    }
    if result.get("analysis"):
        artifacts["analysis.json"] = (
            json.dumps(result["analysis"], indent=2, sort_keys=True) + "\n"
        )
    return PhaseResult(
        artifacts=artifacts,
        total_tasks=len(tasks),
        children=[dict(child) for child in result.get("split") or []],
    )


class Planner(Role):
    """The planning phase: what people said of an earlier plan comes first."""

    def prepare(self, step: Step) -> str:
        return people.plan_feedback(step.task)


ROLE = Planner(
    name="planner",
    phase="planning",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
    documents=("spec.md",),
    sees_map=True,
)
