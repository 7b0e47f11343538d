"""Run cases through the whole pipeline and judge them (docs/eval.md).

Per case and run: its base repository is made afresh on the local forge
(agents.evaluation.sources), its toolchain is bound into the jail
(agents.evaluation.toolchains), the repository is registered with the
case's test and setup commands, and the request becomes a task that
advance_task drives through every phase, QA, review and the merge gate,
as a worker would. Then the judge runs the case's tests on the merged main
(agents.evaluation.judge). Scripted agents answer from a stub of the case's
own (agents.evaluation.scripted); the real ones from the configured model.
"""

from __future__ import annotations

import shutil
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any
from unittest import mock

from django.conf import settings
from django.test import override_settings

from agents.demo import register, steps_driven_here
from agents.evaluation.cases import Case, CaseError
from agents.evaluation.judge import Verdict, judge
from agents.evaluation.results import CaseResult
from agents.evaluation.scripted import SCRIPTED_AGENTS, model_stub
from agents.evaluation.sources import Prepared, SourceError, prepare
from agents.evaluation.toolchains import ToolchainError, prepare_toolchain

MAX_STEPS = 40
ACTOR = "eval"
SCRIPTED_KEY = "scripted-eval-key"


class TurnCounter:
    """Counts model calls (one per agent turn) while installed."""

    def __init__(self) -> None:
        self.calls = 0

    @contextmanager
    def installed(self) -> Iterator[TurnCounter]:
        from integrations.anthropic.client import ModelClient

        original = ModelClient.send
        counter = self

        def send(self_: Any, *args: Any, **kwargs: Any) -> Any:
            counter.calls += 1
            return original(self_, *args, **kwargs)

        with mock.patch.object(ModelClient, "send", send):
            yield self


def eval_settings(root: Path) -> dict[str, Any]:
    """What every case overrides, in this process only: the agent runner,
    the scratch folders under `root`, no retries or approvals in the way,
    notifications to the log."""
    return {
        "CODEX_PHASE_RUNNER": "agents.phase_runner.AgentPhaseRunner",
        "CODEX_WORKTREE_ROOT": str(root / "worktrees"),
        "CODEX_MIRROR_ROOT": str(root / "mirrors"),
        "CODEX_MODEL_MAX_RETRIES": 0,
        "CODEX_RELEASE_REQUIRES_APPROVAL": False,
        "CODEX_TEST_COMMANDS": {},
        "CODEX_NOTIFY_CHANNELS": "log",
    }


def scripted_settings(url: str) -> dict[str, Any]:
    """The settings pointing the agents at a case's scripted model."""
    return {
        "ANTHROPIC_BASE_URL": url,
        "CODEX_CREDENTIALS": {**settings.CODEX_CREDENTIALS, "claude": [SCRIPTED_KEY]},
    }


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


def configure_repository(prepared: Prepared) -> Any:
    """The case's repository registered on the local forge, with its
    commands (an earlier run's row is updated)."""
    case = prepared.case
    repository = register(prepared.bare)
    repository.test_command = case.tests.command
    repository.setup_command = case.setup_command
    repository.setup_network_hosts = " ".join(case.setup_hosts)
    repository.check_timeout_seconds = case.tests.timeout
    repository.merge_gate = "auto"
    repository.save()
    return repository


def why_not_merged(task: Any) -> str:
    """Why a task did not end merged, in a line."""
    reason = task.blocked_reason or ""
    escalation = task.escalations.first()
    if escalation is not None:
        reason = reason or escalation.detail
    if not reason and task.errors:
        reason = str(task.errors[-1].get("message", ""))
    return f"not merged ({task.status}/{task.phase}): {reason}"[:400]


def _result(case: Case, agent: str, run: int, **fields: Any) -> CaseResult:
    defaults: dict[str, Any] = {
        "id": case.id,
        "project": case.project,
        "language": case.language,
        "run": run,
        "agent": agent,
        "resolved": False,
        "status": "not run",
        "judged": False,
        "fail_to_pass": len(case.tests.fail_to_pass),
        "pass_to_pass": len(case.tests.pass_to_pass),
        "fail_to_pass_passed": 0,
        "pass_to_pass_failed": 0,
        "cycles": 0,
        "turns": 0,
        "tokens": 0,
        "cost_usd": 0.0,
        "cost_kind": "simulated" if agent in SCRIPTED_AGENTS else "real",
        "seconds": 0.0,
    }
    return CaseResult(**{**defaults, **fields})


def run_case(
    case: Case, *, agent: str, run: int, root: Path, cache: Path
) -> CaseResult:
    """One case, one run, through the pipeline and the judge."""
    result, _ = run_case_kept(case, agent=agent, run=run, root=root, cache=cache)
    return result


def run_case_kept(
    case: Case,
    *,
    agent: str,
    run: int,
    root: Path,
    cache: Path,
    judged: bool = True,
) -> tuple[CaseResult, Prepared | None]:
    """run_case, and the case's repository as the run left it (None when it
    could not be made). `judged` False leaves the judge out (a benchmark
    judged elsewhere): nothing is resolved then."""
    started = time.monotonic()
    try:
        prepared = prepare(case, root / "remotes" / f"run{run}", cache)
        toolchain = prepare_toolchain(case.toolchain_folder(), cache)
    except (CaseError, SourceError, ToolchainError) as exc:
        note = f"could not be prepared: {exc}"[:400]
        return _result(case, agent, run, note=note), None
    with override_settings(**toolchain.settings()):
        result = _through_pipeline(prepared, agent=agent, run=run, judged=judged)
    result.seconds = round(time.monotonic() - started, 1)
    return result, prepared


def _through_pipeline(
    prepared: Prepared, *, agent: str, run: int, judged: bool = True
) -> CaseResult:
    """The case's request as a task driven to its end, then judged."""
    from codex.fleet.models import AgentRun
    from codex.tasks.models import CreatedBy, Task

    case = prepared.case
    counter = TurnCounter()
    with ExitStack() as stack:
        if agent in SCRIPTED_AGENTS:
            stub = stack.enter_context(model_stub(agent, prepared))
            stack.enter_context(override_settings(**scripted_settings(stub.url)))
        repository = configure_repository(prepared)
        stack.enter_context(counter.installed())
        task, _ = Task.objects.create_from_request(
            repository=repository,
            title=case.title,
            description=case.description,
            acceptance_criteria=case.acceptance_criteria,
            created_by=CreatedBy.MANUAL,
            actor=ACTOR,
        )
        try:
            ended = drive(task)
        except Exception:  # a harness bug must not stop the other cases
            ended = "crashed"
            note = traceback.format_exc(limit=3)[-400:]
        else:
            note = "" if task.pr_merged else why_not_merged(task)
    # main is judged merged or not: unchanged, it must not be resolved (the
    # case's own check that its base lacks what it asks for).
    verdict = judge(prepared) if judged else Verdict(False)
    if task.pr_merged:
        note = verdict.note
    elif verdict.resolved:
        note += "; CASE BROKEN: the unchanged base is judged resolved"
    spend = AgentRun.objects.filter(task=task).spend()
    return _result(
        case,
        agent,
        run,
        resolved=bool(task.pr_merged and verdict.resolved),
        judged=bool(verdict.status),
        status=ended,
        cycles=task.verification_cycles + task.review_cycles,
        turns=counter.calls,
        tokens=int(spend.tokens),
        cost_usd=float(Decimal(spend.cost_usd).quantize(Decimal("0.0001"))),
        note=note,
        **verdict.counts(),
    )


def run_suite(
    cases: list[Case],
    *,
    agent: str,
    root: Path,
    cache: Path,
    repeat: int = 1,
    out: Callable[[str], None] = print,
) -> list[CaseResult]:
    """Every case, `repeat` times over, one after the other. `root` (the
    scratch folder) is emptied first; `cache` (releases, toolchains) kept."""
    root = root.absolute()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    results = []
    with override_settings(**eval_settings(root)), steps_driven_here():
        for run in range(1, repeat + 1):
            for case in cases:
                result = run_case(
                    case, agent=agent, run=run, root=root, cache=cache.absolute()
                )
                out(
                    f"{case.id} (run {run}): "
                    f"{'resolved' if result.resolved else 'not resolved'} "
                    f"({result.status}, {result.turns} turns, {result.seconds}s)"
                    + (f" {result.note[:200]}" if result.note else "")
                )
                results.append(result)
    return results
