"""The scripted agents of the eval: one scripted Messages API per case
(docs/eval.md#agents).

- `gold`: every role answers as a good team would, and the developer writes
  the files the case's reference patch leaves (write_file, delete_file: the
  real tools, so the change is committed, pushed, verified, reviewed and
  merged like any other). It checks the harness: gold must be resolved.
- `empty`: the product manager and the planner answer, the developer submits
  without changing anything. The pipeline escalates; never resolved.

Each case gets its own stub (agents.scripted_model.ModelStub) answering by
phase and turn (PhaseScript), so nothing of one case's conversation can
reach the next.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agents.demo import ScriptedChange, conversation
from agents.evaluation.sources import Prepared
from agents.scripted_model import ModelStub, PhaseScript, Reply, message, submit
from agents.scripted_model import tool_use as use

GOLD, EMPTY, MODEL = "gold", "empty", "model"
SCRIPTED_AGENTS = (GOLD, EMPTY)
AGENTS = (GOLD, EMPTY, MODEL)


def _criteria(prepared: Prepared) -> tuple[tuple[str, str], ...]:
    lines = [
        line.strip().lstrip("-*").strip()
        for line in prepared.case.acceptance_criteria.splitlines()
        if line.strip()
    ]
    evidence = "the repository's test command passes on the change"
    return tuple((line, evidence) for line in lines) or (
        (prepared.case.title, evidence),
    )


def gold_change(prepared: Prepared) -> ScriptedChange:
    """What the gold agents say and write for `prepared`'s case."""
    case = prepared.case
    files = sorted(prepared.gold_files)
    return ScriptedChange(
        spec=f"# {case.title}\n\n## Overview\n{case.description.strip()}\n\n"
        f"## Acceptance Criteria\n{case.acceptance_criteria.strip() or case.title}\n",
        plan=f"# Implementation Plan\n\n## Approach\nChange {', '.join(files)}.",
        files={p: c for p, c in prepared.gold_files.items() if c is not None},
        summary=f"{case.title}.",
        commit_message=case.title[:72],
        criteria=_criteria(prepared),
        release_notes=f"{case.title}.",
        analysis={
            "files": [
                {
                    "path": path,
                    "purpose": case.title,
                    "action": "delete"
                    if prepared.gold_files[path] is None
                    else "modify",
                }
                for path in files
            ],
            "brief": case.description.strip()[:500],
        },
    )


def gold_script(prepared: Prepared) -> Callable[[], Mapping[str, list[Reply]]]:
    """The gold conversation, phase by phase (built afresh per request)."""
    change = gold_change(prepared)
    deleted = sorted(p for p, c in prepared.gold_files.items() if c is None)

    def script() -> Mapping[str, list[Reply]]:
        replies = conversation(change)
        if deleted:
            first, *rest = replies["implementation"]
            writes = first.body["content"] if first.body else []
            deletes = [use("delete_file", {"path": path}) for path in deleted]
            replies["implementation"] = [message(*writes, *deletes), *rest]
        return replies

    return script


def empty_script(prepared: Prepared) -> Callable[[], Mapping[str, list[Reply]]]:
    """Intake and planning as gold's; the developer changes nothing."""
    gold = gold_script(prepared)

    def script() -> Mapping[str, list[Reply]]:
        replies = dict(gold())
        replies["implementation"] = [
            submit(
                {
                    "summary": "Nothing to change.",
                    "commit_message": "No change",
                    "tasks_completed": 0,
                }
            )
        ]
        return replies

    return script


def model_stub(agent: str, prepared: Prepared) -> ModelStub:
    """The case's own scripted Messages API (not started)."""
    builder = gold_script if agent == GOLD else empty_script
    return ModelStub(responder=PhaseScript(builder(prepared)))
