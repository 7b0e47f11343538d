"""QA (verification): the repository's test, lint and type-check commands are
run for real before the agent starts (agents.check_runs); the agent judges
each acceptance criterion with evidence; this module writes the verification
report (docs/domain/tasks.md#verification-report), in which the real runs
overrule whatever the agent claimed.

In the report: `tests_*` and `failures` come from the real test run;
`feedback.checks` lists every command with its outcome (the report has no
column of its own for lint and type-check results); a failing lint or type
check adds a failure entry and, unless CODEX_QA_CHECKS_BLOCK is off, makes
the recommendation request_changes like a failing test always does. A
criterion the agent marks met whose evidence names a test that failed in the
real run is overruled (status failed). What already failed on the base
commit is reported as pre-existing, not the change's (agents.baseline). The
tests near the change run first (agents.ecosystems.nearby): the agent reads
them first, their failures lead the report's, and the whole suite decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agents import baseline, forge_steps, review_inputs
from agents.check_reports import (  # noqa: F401 (the checks' parsers, re-exported)
    ERROR_CHARS,
    JUNIT_MAX_BYTES,
    MAX_FAILURES,
    JUnitError,
    parse_junit,
    parse_pytest,
)
from agents.check_runs import (  # noqa: F401 (the checks themselves, re-exported)
    CHECK_LABELS,
    DEFAULT_CHECK_TIMEOUT_SECONDS,
    DEFAULT_TEST_COMMAND,
    JUNIT_PLACEHOLDER,
    LINT,
    NEARBY,
    TEST,
    TYPE_CHECK,
    CheckRun,
    check_timeout,
    commands_note,
    configured_commands,
    is_new_problem,
    run_check,
    run_checks,
    test_command,
    test_results,
    unrunnable,
)
from agents.ecosystems.nearby import failures_first
from agents.prompts import untrusted
from agents.roles.base import COMMON_RULES, Role, RoleContext, Step
from codex.tasks.runners import PhaseResult

if TYPE_CHECKING:
    from agents.tools import Tool

SYSTEM_PROMPT = f"""\
You are the QA engineer of an autonomous software team. The repository's test
command (and its lint and type-check commands, when it has them) has already
been run on the pull request's code; the results are in the task description.
Check the change against spec.md: judge every acceptance criterion with a
status (passed, failed, or blocked when it cannot be checked) and evidence (a
test, a file and line, a command's output). You may run more commands.
Recommend "approve" only when the checks pass and every criterion passed;
otherwise "request_changes" with feedback the developer can act on, item by
item.

{COMMON_RULES}"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "acceptance_criteria": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "criterion": {"type": "string", "minLength": 1},
                    "status": {
                        "type": "string",
                        "enum": ["passed", "failed", "blocked"],
                    },
                    # the older form of status, still accepted
                    "met": {"type": "boolean"},
                    "evidence": {"type": "string", "minLength": 1},
                },
                "required": ["criterion", "evidence"],
            },
        },
        "recommendation": {"type": "string", "enum": ["approve", "request_changes"]},
        "summary": {"type": "string"},
        "feedback_items": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["acceptance_criteria", "recommendation", "summary"],
}

INSTRUCTIONS = "Verify the change and submit your verification."

OUTPUT_TAIL_CHARS = 4000


# -- the prompt -------------------------------------------------------------------


def checks_prompt(checks: list[CheckRun]) -> str:
    """What the agent is told about the real runs (outputs fenced as
    untrusted: they come from the repository's code)."""
    parts = []
    for check in checks:
        label = CHECK_LABELS.get(check.kind, check.kind)
        line = (
            f"The {label} command `{check.command}` was run in the worktree "
            f"({check.describe()})"
        )
        if check.junit is not None:
            j = check.junit
            line += (
                f"; its JUnit XML reports {j['tests_passed']} passed, "
                f"{j['tests_failed']} failed, {j['tests_skipped']} skipped"
            )
        output = untrusted(f"{label} command output", check.output, raw=True)
        parts.append(f"{line}:\n{output}")
    return "\n\n".join(parts)


# -- the report -------------------------------------------------------------------


def _checks_block() -> bool:
    return bool(getattr(settings, "CODEX_QA_CHECKS_BLOCK", True))


def check_summary(check: CheckRun) -> dict[str, Any]:
    """One command's outcome as it goes into feedback.checks."""
    summary: dict[str, Any] = {
        "kind": check.kind,
        "command": check.command,
        "status": check.status,
        "exit_code": check.exit_code,
    }
    if check.not_run:
        summary["reason"] = check.not_run
    if check.kind in (TEST, NEARBY):
        summary["results_from"] = "junit_xml" if check.junit is not None else "output"
        if check.junit_note:
            summary["junit_note"] = check.junit_note
    return summary


def _criteria(
    submitted: list[dict[str, Any]], failing: list[str]
) -> list[dict[str, Any]]:
    """The agent's criteria with a status each (`met` read as passed or
    failed, neither as blocked), overruled where the evidence of a passed one
    names a test that failed in the real run."""
    criteria = []
    for item in submitted:
        criterion = dict(item)
        met = criterion.pop("met", None)
        if "status" not in criterion:
            criterion["status"] = {True: "passed", False: "failed"}.get(met, "blocked")
        evidence = str(criterion.get("evidence") or "")
        if criterion.get("status") == "passed":
            named = [name for name in failing if name and name in evidence]
            if named:
                criterion["status"] = "failed"
                criterion["evidence"] = (
                    f"overruled: {named[0]} failed in the real test run "
                    f"(the agent's evidence: {evidence})"
                )
        criteria.append(criterion)
    return criteria


def _short_names(failures: list[dict[str, Any]]) -> list[str]:
    """Names of failing tests as evidence may mention them: the full name and
    the test function's own name (test_mul of calc.test_calc::test_mul)."""
    names = set()
    for failure in failures:
        name = str(failure.get("name") or "")
        names.add(name)
        short = re.split(r"::|\.| > ", name)[-1].split("[")[0]
        if short.startswith("test"):
            names.add(short)
    return sorted(names, key=len, reverse=True)


@dataclass
class _Outcome:
    """What the real runs say once set against the base commit
    (agents.baseline): the test run's report fields, whether the tests count
    as passing, and the other checks that failed because of the change."""

    checks: list[CheckRun]
    test: CheckRun | None
    run: dict[str, Any]  # test_results, failures already there marked pre_existing
    tests_ok: bool
    others_failed: list[CheckRun]


def _outcome(checks: list[CheckRun], baseline: dict[str, Any] | None) -> _Outcome:
    """The checks judged against the base commit's (`baseline`: the context's
    extra["baseline"], None when unknown)."""
    base = (baseline or {}).get("checks") or {}
    test = next((c for c in checks if c.kind == TEST), None)
    run = test_results(test)
    nearby = next((c for c in checks if c.kind == NEARBY), None)
    if nearby is not None and test is not None and not test.ok:
        named = [
            f for f in test_results(nearby)["failures"] if f["name"] != nearby.command
        ]
        run["failures"] = failures_first(run["failures"], named)
    tests_ok = test is not None and not is_new_problem(test, base.get(TEST))
    _mark_pre_existing(run["failures"], test, tests_ok, base.get(TEST))
    # The whole suite judges the tests near the change too.
    others_failed = [
        c
        for c in checks
        if c.kind not in (TEST, NEARBY) and is_new_problem(c, base.get(c.kind))
    ]
    return _Outcome(checks, test, run, tests_ok, others_failed)


def _mark_pre_existing(
    failures: list[dict[str, Any]],
    test: CheckRun | None,
    tests_ok: bool,
    base_test: dict[str, Any] | None,
) -> None:
    """Mark the failing tests that are not the change's: all of them when the
    test run failed but only as it did on the base, else those that also
    failed there."""
    failed_as_on_the_base = test is not None and not test.ok and tests_ok
    failing_on_the_base = set((base_test or {}).get("failing") or [])
    for failure in failures:
        if failed_as_on_the_base or failure.get("name") in failing_on_the_base:
            failure["pre_existing"] = True


def _check_failures(others_failed: list[CheckRun]) -> list[dict[str, Any]]:
    """A failure entry for each lint or type check the change broke."""
    return [
        {
            "name": f"{CHECK_LABELS.get(c.kind, c.kind)}: {c.command}",
            "error": f"{c.describe()}: " + c.output[-ERROR_CHARS:],
            "check": c.kind,
        }
        for c in others_failed
    ]


def _feedback_items(result: dict[str, Any], outcome: _Outcome) -> list[str]:
    """The developer's to-do list: the failing tests that are the change's,
    the agent's own items, then the broken checks."""
    items = [str(item) for item in result.get("feedback_items") or []]
    if not outcome.tests_ok:
        items = [
            f"Fix failing test {f['name']}: {f['error']}".strip(": ")
            for f in outcome.run["failures"]
            if not f.get("pre_existing")
        ] + items
    for check in outcome.others_failed:
        label = CHECK_LABELS.get(check.kind, check.kind)
        items.append(
            f"Make the {label} command `{check.command}` pass ({check.describe()})."
        )
    return items


def _recommendation(
    result: dict[str, Any], outcome: _Outcome, criteria: list[dict[str, Any]]
) -> str:
    """The agent's recommendation, unless failing tests, a broken check (when
    CODEX_QA_CHECKS_BLOCK) or a criterion not passed send the change back."""
    if not outcome.tests_ok or (outcome.others_failed and _checks_block()):
        return "request_changes"
    if any(c.get("status") != "passed" for c in criteria):
        return "request_changes"
    return result["recommendation"]


def _pre_existing_failures(outcome: _Outcome) -> list[str]:
    """What failed already on the base: reported, not the developer's to fix."""
    known = [f["name"] for f in outcome.run["failures"] if f.get("pre_existing")]
    known += [
        f"{CHECK_LABELS.get(c.kind, c.kind)}: {c.command}"
        for c in outcome.checks
        if c.kind not in (TEST, NEARBY) and not c.ok and c not in outcome.others_failed
    ]
    return known


def _changes_requested(
    result: dict[str, Any], outcome: _Outcome, items: list[str]
) -> dict[str, Any]:
    """The feedback's fields when the change goes back to the developer:
    priority, summary, items and the failing commands' output tails."""
    summary = result["summary"]
    if not outcome.tests_ok:
        failed_count = outcome.run["tests_failed"] or "some"
        summary = f"{failed_count} test(s) failed: {summary}"
    fields: dict[str, Any] = {
        "priority": "high"
        if not outcome.tests_ok or outcome.others_failed
        else "medium",
        "summary": summary,
        "items": items,
    }
    if outcome.test is not None:
        fields["test_command"] = outcome.test.command
        fields["test_output"] = outcome.test.output[-OUTPUT_TAIL_CHARS:]
    failed = [c for c in outcome.checks if not c.ok]
    if failed:
        fields["check_outputs"] = {
            c.kind: c.output[-OUTPUT_TAIL_CHARS:] for c in failed
        }
    return fields


def _feedback(
    result: dict[str, Any], outcome: _Outcome, recommendation: str
) -> dict[str, Any]:
    """The report's feedback: every check's outcome, what failed already on
    the base, and what the developer must change when the change goes back."""
    feedback: dict[str, Any] = {"checks": [check_summary(c) for c in outcome.checks]}
    known = _pre_existing_failures(outcome)
    if known:
        feedback["pre_existing_failures"] = known
    if recommendation == "request_changes":
        feedback.update(
            _changes_requested(result, outcome, _feedback_items(result, outcome))
        )
    return feedback


def to_phase_result(result: dict[str, Any], context: RoleContext) -> PhaseResult:
    """The verification report from the agent's `result` and the real runs
    (context.checks), judged against the base commit; records the cycle's
    BuildResult."""
    outcome = _outcome(list(context.checks), context.extra.get("baseline"))
    failing = _short_names(outcome.run["failures"]) if not outcome.tests_ok else []
    criteria = _criteria(result["acceptance_criteria"], failing)
    recommendation = _recommendation(result, outcome, criteria)
    failures = outcome.run["failures"] + _check_failures(outcome.others_failed)
    verification: dict[str, Any] = {
        **outcome.run,
        "failures": failures,
        "acceptance_criteria": criteria,
        "recommendation": recommendation,
        "feedback": _feedback(result, outcome, recommendation),
    }
    record_build(
        context, outcome.checks, failures, outcome.tests_ok, outcome.others_failed
    )
    return PhaseResult(verification=verification)


def record_build(
    context: RoleContext,
    checks: list[CheckRun],
    failures: list[dict[str, Any]],
    tests_ok: bool,
    others_failed: list[CheckRun],
) -> None:
    """This cycle's BuildResult: the commands QA ran and how they went (a
    check passes when it passed, failed the same way on the base, or is not
    configured)."""
    task = getattr(context, "task", None)
    if task is None or getattr(task, "pk", None) is None:
        return
    from codex.tasks.models.analysis import BuildResult

    kinds = {check.kind for check in others_failed}
    BuildResult.objects.update_or_create(
        task=task,
        cycle=task.verification_cycles + 1,
        defaults={
            "commands_run": [
                BuildResult.command(
                    c.command, -1 if c.exit_code is None else c.exit_code, c.output
                )
                for c in checks
            ],
            "tests_passed": tests_ok,
            "lint_passed": LINT not in kinds,
            "type_check_passed": TYPE_CHECK not in kinds,
            "errors": [
                f"{f.get('name')}: {f.get('error', '')}"[:ERROR_CHARS]
                for f in failures
                if not f.get("pre_existing")
            ],
        },
    )


class QA(Role):
    """The verification phase: the repository's checks run for real first,
    against the change and the base commit."""

    def prepare(self, step: Step) -> str | PhaseResult:
        """The checks' results, what already fails on the base, and the
        diff; an escalation when the checks cannot run at all (a
        configuration problem no developer can fix)."""
        context, repository = step.context, step.repository
        context.checks = run_checks(step.sandbox, repository)
        unrunnable_reason = unrunnable(context.checks)
        if unrunnable_reason:
            return PhaseResult.escalate(unrunnable_reason)
        context.extra["baseline"] = baseline.for_task(step.worktree, repository)
        parts = (
            checks_prompt(context.checks),
            baseline.note(context.extra["baseline"]),
            review_inputs.diff_prompt(step.worktree, step.base_ref),
        )
        return "\n\n".join(part for part in parts if part)

    def tools(self, step: Step) -> list[Tool]:
        return [review_inputs.diff_tool(step.worktree, step.base_ref)]

    def finish(self, step: Step, submitted: dict[str, Any]) -> PhaseResult:
        """The report; an approved change's draft pull request becomes ready
        for review."""
        result = self.to_phase_result(submitted, step.context)
        verification = result.verification or {}
        if verification.get("recommendation") == "approve":
            forge_steps.mark_ready(step.task, step.forge, step.branch)
        return result


ROLE = QA(
    name="qa",
    phase="verification",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
    documents=("spec.md", "plan.md", "tasks.md"),
)
