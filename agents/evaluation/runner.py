"""Run the evaluation suite: each request through the pipeline, judged by
its hidden tests, measured (agents.evaluation)."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any
from unittest import mock

from django.test import override_settings

from agents.demo import (
    PHASES,
    ScriptedChange,
    conversation,
    create_bare_repository,
    demo_settings,
    git,
    register,
    steps_driven_here,
)
from agents.evaluation.suite import CASES, REPOSITORIES, Case, SampleRepository

MAX_STEPS = 40
ACTOR = "eval"
HIDDEN_TIMEOUT_SECONDS = 300


@dataclass
class CaseResult:
    """One request's outcome and what it cost."""

    id: str
    language: str
    resolved: bool
    status: str
    cycles: int
    turns: int
    tokens: int
    cost_usd: float
    seconds: float
    note: str = ""


def scripted_change(case: Case) -> ScriptedChange:
    """What the scripted agents answer for `case`: the intended change."""
    criteria = tuple(
        (line.lstrip("- ").strip(), "the tests pass")
        for line in case.criteria.splitlines()
        if line.strip()
    )
    return ScriptedChange(
        spec=f"# Feature: {case.title}\n\n## Overview\n{case.description}\n\n"
        f"## Acceptance Criteria\n{case.criteria}\n",
        plan=f"# Implementation Plan\n\n## Approach\n{case.description}",
        files=dict(case.solution),
        summary=f"{case.title}, with a test.",
        commit_message=case.title,
        criteria=criteria,
        release_notes=f"{case.title}.",
        analysis={"files": sorted(case.solution), "brief": case.description},
    )


def scripted_replies(case: Case) -> list:
    replies = conversation(scripted_change(case))
    return [reply for phase in PHASES for reply in replies[phase]]


class TurnCounter:
    """Counts model calls (one per agent turn or answer) while installed."""

    def __init__(self) -> None:
        self.calls = 0

    @contextmanager
    def installed(self):
        from integrations.anthropic.client import ModelClient

        original = ModelClient.send
        counter = self

        def send(self_, *args: Any, **kwargs: Any):
            counter.calls += 1
            return original(self_, *args, **kwargs)

        with mock.patch.object(ModelClient, "send", send):
            yield self


def eval_settings(root: Path, stub_url: str | None) -> dict[str, Any]:
    """The demo's settings (local forge, jail toolchain); with no stub, the
    configured model and key stay as they are."""
    overrides = demo_settings(root, stub_url or "")
    overrides.pop("EMAIL_BACKEND", None)
    overrides.pop("EMAIL_FILE_PATH", None)
    overrides["CODEX_NOTIFY_CHANNELS"] = "log"
    if stub_url is None:
        overrides.pop("ANTHROPIC_BASE_URL")
        overrides.pop("CODEX_CREDENTIALS")
    return overrides


def drive(task: Any) -> str:
    """Advance the task until it ends or waits for a person."""
    from codex.tasks.jobs import advance_task
    from codex.tasks.models import Status

    for _ in range(MAX_STEPS):
        task.refresh_from_db()
        if task.status not in (Status.PENDING, Status.IN_PROGRESS):
            break
        advance_task(task.task_id)
    task.refresh_from_db()
    return f"{task.status}/{task.phase}"


def judge(bare: Path, sample: SampleRepository, case: Case) -> tuple[bool, str]:
    """Run the hidden tests on the merged main branch, in the jail."""
    from integrations.jail import Jail

    folder = Path(tempfile.mkdtemp(prefix="codex-eval-"))
    try:
        checkout = folder / "main"
        git(
            "clone", "--quiet", "--branch", "main", str(bare), str(checkout), cwd=folder
        )
        for path, content in case.hidden_tests.items():
            (checkout / path).write_text(content)
        result = Jail.for_worktree(checkout).run(
            sample.hidden_command, timeout=HIDDEN_TIMEOUT_SECONDS
        )
        return result.exit_code == 0 and not result.timed_out, result.output[-2000:]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_case(case: Case, root: Path, stub: Any = None) -> CaseResult:
    """`case` through the pipeline on a fresh sample repository."""
    from codex.fleet.models import AgentRun
    from codex.tasks.models import CreatedBy, Task

    sample = REPOSITORIES[case.repository]
    bare = create_bare_repository(root / "remotes", f"{case.id}", dict(sample.files))
    repository = register(bare)
    repository.test_command = sample.test_command
    repository.save(update_fields=["test_command"])
    if stub is not None:
        stub.add(*scripted_replies(case))
    counter = TurnCounter()
    started = time.monotonic()
    with counter.installed():
        task, _ = Task.objects.create_from_request(
            repository=repository,
            title=case.title,
            description=case.description,
            acceptance_criteria=case.criteria,
            created_by=CreatedBy.MANUAL,
            actor=ACTOR,
        )
        ended = drive(task)
    seconds = time.monotonic() - started
    resolved, output = (False, "")
    if task.pr_merged:
        resolved, output = judge(bare, sample, case)
    spend = AgentRun.objects.filter(task=task).spend()
    return CaseResult(
        id=case.id,
        language=sample.language,
        resolved=resolved,
        status=ended,
        cycles=task.verification_cycles + task.review_cycles,
        turns=counter.calls,
        tokens=int(spend.tokens),
        cost_usd=float(Decimal(spend.cost_usd).quantize(Decimal("0.0001"))),
        seconds=round(seconds, 1),
        note="" if resolved else _why_not(task, output),
    )


def _why_not(task: Any, output: str) -> str:
    """Why a case is not resolved, in a line."""
    if not task.pr_merged:
        reason = task.errors[-1].get("message", "") if task.errors else ""
        return f"not merged ({task.status}/{task.phase}) {reason}"[:300]
    return f"hidden tests failed: {output[-250:]}"


def run_suite(
    root: Path,
    *,
    scripted: bool,
    only: Iterable[str] = (),
    out: Callable[[str], None] = print,
) -> list[CaseResult]:
    """Every case (or those named in `only`), one after the other."""
    from agents.scripted_model import ModelStub

    chosen = [case for case in CASES if not only or case.id in set(only)]
    root = root.absolute()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    results = []
    with ExitStack() as stack:
        stub = stack.enter_context(ModelStub()) if scripted else None
        settings = eval_settings(root, stub.url if stub else None)
        stack.enter_context(override_settings(**settings))
        stack.enter_context(steps_driven_here())
        for case in chosen:
            result = run_case(case, root, stub)
            out(
                f"{case.id}: {'resolved' if result.resolved else 'not resolved'} "
                f"({result.status}, {result.turns} turns, {result.seconds}s)"
            )
            results.append(result)
    return results


def totals(results: list[CaseResult]) -> dict[str, Any]:
    return {
        "cases": len(results),
        "resolved": sum(r.resolved for r in results),
        "cycles": sum(r.cycles for r in results),
        "turns": sum(r.turns for r in results),
        "tokens": sum(r.tokens for r in results),
        "cost_usd": round(sum(r.cost_usd for r in results), 4),
        "seconds": round(sum(r.seconds for r in results), 1),
    }


def table(results: list[CaseResult]) -> str:
    """The results as a Markdown table, with a total row."""
    head = "| case | language | resolved | cycles | turns | tokens | cost $ | time s |"
    lines = [head, "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(
            f"| {r.id} | {r.language} | {'yes' if r.resolved else 'no'} | "
            f"{r.cycles} | {r.turns} | {r.tokens} | {r.cost_usd:.4f} | {r.seconds} |"
        )
    t = totals(results)
    lines.append(
        f"| total | | {t['resolved']}/{t['cases']} | {t['cycles']} | {t['turns']} | "
        f"{t['tokens']} | {t['cost_usd']:.4f} | {t['seconds']} |"
    )
    return "\n".join(lines) + "\n"


def write_report(results: list[CaseResult], folder: Path, *, mode: str) -> Path:
    """results.json and results.md in `folder`; the JSON's path."""
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "mode": mode,
        "totals": totals(results),
        "cases": [asdict(r) for r in results],
    }
    path = folder / "results.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    (folder / "results.md").write_text(table(results))
    return path
