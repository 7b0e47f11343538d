"""`manage.py demo --scenario fanout`: a parent request fanned out to two
children whose pull requests merge (docs/children.md), scripted.

The demo creates <root>/fanout.git (the same tiny calc project as the first
scenario) and one feature request, "Add sub and mul". The scripted product
manager writes its spec; the scripted planner judges it too big for one pull
request and splits it into C1 (sub) and C2 (mul). The parent's next step fans
out: a local-forge issue for the parent, one task per child. Each child runs
all six phases in its own worktree with its own coding instance; at release
it reports on the parent's issue ("🤖 Child C1 complete: PR #n ready for
review") and waits. With both reports in, the completion analysis asks the
scripted Claude, which answers MERGE_ALL. The demo turns the consolidation
option on (children.consolidation_pr, off by default: docs/children.md): the
children's branches are merged into one branch and one consolidation pull
request referencing both children's opens and merges (the analysis's
final_pr_number); the children's pull requests are then found merged with
it. The analysis, with its consolidation decision, is posted on the
parent's issue, the children complete and so does the parent. Each child
works on a local-forge issue of its own, which its runs record as worked.

The steps run here, one at a time, in the order the workers would take them
(the next-step jobs are collected instead of enqueued); the reports and the
analysis run as their jobs would, inline.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

from django.test.utils import override_settings

from agents.demo import (
    ACTOR,
    BANNER,
    CALC,
    README,
    TEST_CALC,
    ScriptedChange,
    conversation,
    create_bare_repository,
    demo_settings,
    git,
    register,
)
from codex.core.addresses import console_base_url

if TYPE_CHECKING:
    from codex.tasks.models import Task

REPOSITORY_NAME = "fanout"
MAX_STEPS = 60
TITLE = "Add sub and mul"
DESCRIPTION = "As a user of calc, I want sub(a, b) and mul(a, b) next to add(a, b)."
CRITERIA = "- sub(5, 3) == 2\n- mul(2, 3) == 6"
SUB = "def sub(a, b):\n    return a - b\n"
TEST_SUB = "from sub import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"
MUL = "def mul(a, b):\n    return a * b\n"
TEST_MUL = "from mul import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
SPLIT = [
    {
        "title": "Add sub(a, b)",
        "description": "sub.py with sub(a, b) and its test.",
        "acceptance_criteria": "- sub(5, 3) == 2",
    },
    {
        "title": "Add mul(a, b)",
        "description": "mul.py with mul(a, b) and its test.",
        "acceptance_criteria": "- mul(2, 3) == 6",
    },
]


def _change(name: str, files: dict[str, str], criterion: str) -> ScriptedChange:
    return ScriptedChange(
        spec=f"# Feature: {name}\n\n## Acceptance Criteria\n- {criterion}\n",
        plan=f"# Implementation Plan\n\nAdd {name}.py and its test.",
        files=files,
        summary=f"Added {name} and its test.",
        commit_message=f"Add {name}",
        criteria=((criterion, f"test_{name}"),),
        release_notes=f"Adds {name}(a, b).",
    )


CHILD_CHANGES = {
    "Add sub(a, b)": _change(
        "sub", {"sub.py": SUB, "test_sub.py": TEST_SUB}, "sub(5, 3) == 2"
    ),
    "Add mul(a, b)": _change(
        "mul", {"mul.py": MUL, "test_mul.py": TEST_MUL}, "mul(2, 3) == 6"
    ),
}
PARENT_SPEC = (
    "# Feature: sub and mul\n\n## Overview\nTwo functions, each its own pull "
    "request.\n\n## Acceptance Criteria\n- sub(5, 3) == 2\n- mul(2, 3) == 6\n"
)
PHASE_MARKERS = {
    "should_proceed": "intake",
    "plan_md": "planning",
    "commit_message": "implementation",
    "recommendation": "verification",
    "assessment": "review",
    "release_notes": "release",
}
ANALYST_MARK = "You decide what happens to the work of child agents"


def _phase(body: dict[str, Any]) -> str:
    for tool in body.get("tools") or []:
        if tool.get("name") == "submit_result":
            properties = (tool.get("input_schema") or {}).get("properties") or {}
            for marker, phase in PHASE_MARKERS.items():
                if marker in properties:
                    return phase
    return ""


def _first_user_text(body: dict[str, Any]) -> str:
    for msg in body.get("messages") or []:
        if msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, str):
                return content
            return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def parent_conversation() -> dict[str, list]:
    """The parent's two phases: spec.md, then the plan with its split."""
    from agents.scripted_model import submit

    replies = conversation(_change("calc", {}, "sub and mul work"))
    replies["intake"] = [
        submit(
            {
                "should_proceed": True,
                "needs_clarification": False,
                "spec_md": PARENT_SPEC,
            }
        )
    ]
    replies["planning"] = [
        submit(
            {
                "plan_md": "# Implementation Plan\n\nTwo children, one PR each.",
                "tasks": [{"title": child["title"]} for child in SPLIT],
                "split": SPLIT,
            }
        )
    ]
    return replies


def analyst_reply(body: dict[str, Any]):
    """The model's completion analysis (docs/domain/fan-out.md#merge-decision):
    merge every reported PR."""
    from agents.scripted_model import message

    prs = sorted({int(n) for n in re.findall(r"PR #([0-9]+)", json.dumps(body))})
    answer = {
        "analysis": {
            "merge_strategy": "MERGE_ALL",
            "prs_to_merge": prs,
            "reasoning": "Every child completed with a pull request of its own; "
            "they touch different files, so they merge in child order.",
            "summary": f"{len(prs)} of {len(prs)} children successful. Merging all.",
        }
    }
    return message(json.dumps(answer))


def responder(body: dict[str, Any]):
    """Answers every conversation of the scenario from the request alone."""
    if ANALYST_MARK in json.dumps(body.get("system", "")):
        return analyst_reply(body)
    phase = _phase(body)
    first = _first_user_text(body)
    change = next((c for t, c in CHILD_CHANGES.items() if t in first), None)
    replies = (conversation(change) if change else parent_conversation())[phase]
    turn = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
    return replies[min(turn, len(replies) - 1)]


@dataclass
class FanOutDemoResult:
    parent: Task
    steps: list[str] = field(default_factory=list)
    bare: Path | None = None
    main_log: str = ""


@contextmanager
def jobs_run_here(pending: deque) -> Iterator[None]:
    """Next-step jobs are collected in `pending` (the demo runs them in
    order); every other job (reports, the analysis's carry-out) runs inline."""
    from django_q import tasks as q_tasks

    from codex.tasks.jobs import ADVANCE_JOB

    original = q_tasks.async_task
    quiet = logging.getLogger("django-q")
    level = quiet.level
    quiet.setLevel(logging.WARNING)  # an inline job's log lines are noise here

    def async_task(func, *args, **kwargs):
        if func == ADVANCE_JOB:
            pending.append(args[0])
            return None
        kwargs["sync"] = True
        return original(func, *args, **kwargs)

    with (
        override_settings(CODEX_RUN_JOBS_INLINE=True),
        mock.patch.object(q_tasks, "async_task", async_task),
    ):
        try:
            yield
        finally:
            quiet.setLevel(level)


def run_fanout_demo(root: Path, out: Callable[[str], None] = print) -> FanOutDemoResult:
    """The second scenario; `out` prints a line."""
    from agents.scripted_model import ModelStub
    from codex.tasks.jobs import advance_task
    from codex.tasks.models import CreatedBy, Task

    root = root.absolute()
    out("")
    out(f"{BANNER} (scenario 2: a parent and its children)")
    bare = create_bare_repository(
        root,
        REPOSITORY_NAME,
        seed={"calc.py": CALC, "test_calc.py": TEST_CALC, "README.md": README},
    )
    for scratch in ("mirrors", "worktrees"):
        shutil.rmtree(root / scratch, ignore_errors=True)
    repository = register(bare)
    out(f"Sample repository: {repository.url} (local forge)")
    pending: deque[str] = deque()
    with ModelStub(responder=responder) as stub:  # noqa: SIM117 (stub.url)
        with (
            override_settings(
                **demo_settings(root, stub.url), CODEX_CHILDREN_CONSOLIDATION_PR=True
            ),
            jobs_run_here(pending),
        ):
            parent, _ = Task.objects.create_from_request(
                repository=repository,
                title=TITLE,
                description=DESCRIPTION,
                acceptance_criteria=CRITERIA,
                created_by=CreatedBy.MANUAL,
                actor=ACTOR,
            )
            out(f"Parent request {parent.task_id}: {TITLE!r}")
            result = FanOutDemoResult(parent=parent, bare=bare)
            if parent.task_id not in pending:
                pending.append(parent.task_id)
            while pending and len(result.steps) < MAX_STEPS:
                task_id = pending.popleft()
                task = Task.objects.get(task_id=task_id)
                name = _name(task)
                done = advance_task(task_id)
                result.steps.append(done)
                line = f"  step {len(result.steps):>2}: {name:<22} {task.phase:<15}"
                out(f"{line} -> {done}"[:120])
    parent.refresh_from_db()
    result.main_log = git("log", "--format=%h %s", "main", cwd=bare)
    report(result, out)
    return result


def _name(task: Task) -> str:
    child = getattr(task, "as_child", None) if hasattr(task, "as_child") else None
    return f"{child.child_id} {task.task_id}" if child else f"parent {task.task_id}"


def report(result: FanOutDemoResult, out: Callable[[str], None]) -> None:
    """What the scenario did: the parent, its children, the analysis, main."""
    from codex.children.models import Child, FanOut
    from codex.repositories.models import LocalComment

    parent = result.parent
    out("")
    out(f"Parent {parent.task_id}: status {parent.status}")
    fan_out = FanOut.objects.filter(parent=parent).first()
    if fan_out is None:
        out("  it did not fan out")
        return
    out(f"  fan-out {fan_out.state}, issue #{fan_out.issue_number}")
    for child in Child.objects.filter(fan_out=fan_out).select_related("task"):
        task = child.task
        out(f"  {child.child_id} {task.task_id}: {task.status}, {task.pr_url or '-'}")
    out(f"Comments on the parent's issue #{fan_out.issue_number}:")
    for comment in LocalComment.objects.filter(
        issue__repository=parent.repository, issue__number=fan_out.issue_number
    ).order_by("id"):
        first = next((line for line in comment.body.splitlines() if line.strip()), "")
        out(f"  {first[:100]}")
    analysis = getattr(fan_out, "analysis", None)
    if analysis is not None:
        from codex.children.execute import consolidation_line

        out(
            f"Analysis: {analysis.merge_strategy} by {analysis.decided_by}, "
            f"merge {', '.join(f'#{n}' for n in analysis.prs_to_merge) or 'nothing'}"
        )
        out(f"  {consolidation_line(analysis)}")
        out(f"  final_pr_number: {analysis.final_pr_number}")
    out(f"main in {result.bare}:")
    for line in result.main_log.splitlines()[:10]:
        out(f"  {line}")
    out(f"  {console_base_url()}/admin/children/fanout/{fan_out.pk}/change/")
