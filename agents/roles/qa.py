"""QA (verification): the repository's test, lint and type-check commands are
run for real before the agent starts (`run_checks`); the agent judges each
acceptance criterion with evidence; this module writes the verification
report (docs/domain/tasks.md#verification-report), in which the real runs
overrule whatever the agent
claimed.

The commands come from the repository (`Repository.test_command`,
`lint_command`, `type_check_command`, editable in the admin and the API),
else from the settings: CODEX_TEST_COMMANDS[full_name or url], then
CODEX_TEST_COMMAND for tests; CODEX_LINT_COMMAND and CODEX_TYPE_CHECK_COMMAND
for the others, which are not run when empty. A test command containing
`{junit_xml}` gets a path outside the worktree there; the JUnit XML the
command writes is parsed (safely: it comes from the repository's own code)
for counts and failing tests. Without it, pytest's summary lines are read.

In the report: `tests_*` and `failures` come from the real test run;
`feedback.checks` lists every command with its outcome (the report has no
column of its own for lint and type-check results); a failing lint or type
check adds a failure entry and, unless CODEX_QA_CHECKS_BLOCK is off, makes
the recommendation request_changes like a failing test always does. A
criterion the agent marks met whose evidence names a test that failed in the
real run is overruled (status failed).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agents.check_reports import (  # noqa: F401 (the checks' parsers, re-exported)
    ERROR_CHARS,
    JUNIT_MAX_BYTES,
    MAX_FAILURES,
    JUnitError,
    parse_junit,
    parse_pytest,
)
from agents.prompts import untrusted
from agents.roles.base import COMMON_RULES, Role, RoleContext
from agents.tools import ToolError
from codex.tasks.runners import PhaseResult
from integrations.jail import JailUnavailable

if TYPE_CHECKING:
    from agents.sandbox import Sandbox
    from codex.repositories.models import Repository

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

DEFAULT_TEST_COMMAND = (
    "python -B -m pytest -q -p no:cacheprovider --junitxml={junit_xml}"
)
JUNIT_PLACEHOLDER = "{junit_xml}"
OUTPUT_TAIL_CHARS = 4000
# The checks, in the order they run and are reported.
TEST, LINT, TYPE_CHECK = "test", "lint", "type_check"
CHECK_LABELS = {TEST: "test", LINT: "lint", TYPE_CHECK: "type-check"}


# -- which commands ----------------------------------------------------------


def test_command(repository: Repository) -> str:
    """The repository's test command: its own, else CODEX_TEST_COMMANDS[full
    name or url], else CODEX_TEST_COMMAND, else DEFAULT_TEST_COMMAND."""
    per_repository = getattr(settings, "CODEX_TEST_COMMANDS", None) or {}
    return (
        (getattr(repository, "test_command", "") or "").strip()
        or per_repository.get(repository.full_name)
        or per_repository.get(repository.url)
        or getattr(settings, "CODEX_TEST_COMMAND", None)
        or DEFAULT_TEST_COMMAND
    )


def configured_commands(repository: Repository) -> list[tuple[str, str]]:
    """(kind, command) of every check to run: always the tests; lint and
    type check when the repository or the settings name a command."""
    commands = [(TEST, test_command(repository))]
    for kind, setting in (
        (LINT, "CODEX_LINT_COMMAND"),
        (TYPE_CHECK, "CODEX_TYPE_CHECK_COMMAND"),
    ):
        command = (getattr(repository, f"{kind}_command", "") or "").strip() or (
            getattr(settings, setting, "") or ""
        ).strip()
        if command:
            commands.append((kind, command))
    return commands


# -- running them ---------------------------------------------------------------


@dataclass
class CheckRun:
    """One command run for real in the worktree, and what came of it."""

    kind: str  # test | lint | type_check
    command: str
    exit_code: int | None = None
    output: str = ""
    timed_out: bool = False
    not_run: str = ""  # why the command could not start
    junit: dict[str, Any] | None = None  # parse_junit's result
    junit_note: str = ""  # why there is no JUnit result

    @property
    def status(self) -> str:
        """passed, failed, timed_out or not_run."""
        if self.not_run:
            return "not_run"
        if self.timed_out or self.exit_code is None:
            return "timed_out"
        return "passed" if self.exit_code == 0 else "failed"

    @property
    def ok(self) -> bool:
        return self.status == "passed"

    def describe(self) -> str:
        """exit code 0 / timed out / could not run: ..."""
        if self.not_run:
            return f"could not run: {self.not_run}"
        if self.status == "timed_out":
            return "timed out and was stopped"
        return f"exit code {self.exit_code}"


DEFAULT_CHECK_TIMEOUT_SECONDS = 900


def check_timeout(repository: Repository) -> int:
    """How long one of QA's checks may run: the repository's own
    check_timeout_seconds, else CODEX_CHECK_TIMEOUT_SECONDS."""
    own = getattr(repository, "check_timeout_seconds", None)
    return int(
        own
        or getattr(settings, "CODEX_CHECK_TIMEOUT_SECONDS", None)
        or DEFAULT_CHECK_TIMEOUT_SECONDS
    )


def _check_sandbox(sandbox: Sandbox, seconds: int) -> Sandbox:
    """`sandbox` with the checks' own time limit instead of a one-off
    command's (a suite takes longer than an agent's `ls`)."""
    from agents.sandbox import Sandbox

    try:
        jail = sandbox.jail
    except JailUnavailable:
        return sandbox  # run_check says why commands cannot run
    limits = dataclasses.replace(
        jail.limits, wall_seconds=float(seconds), cpu_seconds=int(seconds)
    )
    return Sandbox(
        sandbox.root,
        jail=dataclasses.replace(jail, limits=limits),
        allowed_commands=sandbox.allowed_commands,
    )


def run_checks(sandbox: Sandbox, repository: Repository) -> list[CheckRun]:
    """Run every configured command in the sandbox, the tests first, each
    within the repository's check timeout."""
    checking = _check_sandbox(sandbox, check_timeout(repository))
    return [
        run_check(checking, kind, command)
        for kind, command in configured_commands(repository)
    ]


def commands_note(repository: Repository) -> str:
    """The repository's commands, for every role's prompt."""
    lines = []
    for kind, command in configured_commands(repository):
        shown = command.replace(f" --junitxml={JUNIT_PLACEHOLDER}", "").replace(
            JUNIT_PLACEHOLDER, "/tmp/junit.xml"
        )
        lines.append(f"- {CHECK_LABELS.get(kind, kind)}: `{shown}`")
    return (
        "The repository's check commands (QA runs them on the change and on the "
        "base branch; run them yourself with bash):\n" + "\n".join(lines)
    )


def is_new_problem(check: CheckRun, base: dict[str, Any] | None) -> bool:
    """Whether `check`'s failure is the change's: it fails here, and it
    passed on the base commit, or new tests fail, or it fails differently
    without naming tests. `base`: the check's outcome on the base commit
    (agents.baseline), None when unknown."""
    if check.ok:
        return False
    if base is None or base.get("status") == "passed":
        return True
    names = {str(f.get("name")) for f in test_results(check)["failures"]}
    if check.kind == TEST and names and base.get("failing"):
        return bool(names - set(base["failing"]))
    return check.status != base.get("status")


def run_check(sandbox: Sandbox, kind: str, command: str) -> CheckRun:
    """Run one command in the jail. A test command with {junit_xml} writes its
    JUnit XML to a fresh folder outside the worktree (mounted writable in the
    jail), read and removed afterwards."""
    check = CheckRun(kind=kind, command=command)
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        check.not_run = f"the command cannot be parsed: {exc}"
        return check
    junit_dir = None
    junit_path = None
    if any(JUNIT_PLACEHOLDER in arg for arg in argv):
        junit_dir = Path(tempfile.mkdtemp(prefix="codex-junit-"))
        # The jail's user writes here; nothing else is in the folder.
        junit_dir.chmod(0o777)
        junit_path = junit_dir / "junit.xml"
        try:
            inside = sandbox.jail.output_path(junit_dir, "junit.xml")
        except JailUnavailable as exc:
            shutil.rmtree(junit_dir, ignore_errors=True)
            check.not_run = f"commands cannot run: {exc}"
            return check
        argv = [arg.replace(JUNIT_PLACEHOLDER, inside) for arg in argv]
    try:
        try:
            result = sandbox.run_command(argv, outputs=junit_dir)
        except ToolError as exc:
            check.not_run = str(exc)
            return check
        check.exit_code = None if result.timed_out else result.exit_code
        check.timed_out = result.timed_out
        check.output = result.output
        if junit_path is not None:
            try:
                check.junit = parse_junit(junit_path)
            except JUnitError as exc:
                check.junit_note = str(exc)
    finally:
        if junit_dir is not None:
            shutil.rmtree(junit_dir, ignore_errors=True)
    return check


def unrunnable(checks: list[CheckRun]) -> str:
    """Why verification cannot go on, when a configured command could not
    even start (an unknown or disallowed program, unparsable quoting): that
    is for a person to fix in the repository's commands, not for the
    developer. "" when every command ran."""
    broken = [check for check in checks if check.status == "not_run"]
    if not broken:
        return ""
    return "; ".join(
        f"the {CHECK_LABELS.get(c.kind, c.kind)} command `{c.command}` could not "
        f"run: {c.not_run}"
        for c in broken
    ) + (
        " (fix the repository's verification commands in the admin, or "
        "CODEX_SANDBOX_PATH)"
    )


def test_results(check: CheckRun | None) -> dict[str, Any]:
    """The report's test fields from the test run: JUnit XML when there is
    one, else pytest's output; a failed run without a named failing test gets
    one failure entry naming the command."""
    if check is None:
        return parse_pytest("")
    results = check.junit if check.junit is not None else parse_pytest(check.output)
    results = {**results, "failures": list(results["failures"])}
    if not check.ok and not results["failures"]:
        results["failures"] = [
            {
                "name": check.command,
                "error": f"{check.describe()}: " + check.output[-1500:],
            }
        ]
    return results


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
    if check.kind == TEST:
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


def to_phase_result(result: dict[str, Any], context: RoleContext) -> PhaseResult:
    checks: list[CheckRun] = list(context.checks)
    test = next((c for c in checks if c.kind == TEST), None)
    run = test_results(test)
    # What already failed on the base commit is not the change's (agents.baseline).
    base = (context.extra.get("baseline") or {}).get("checks") or {}
    pre_existing = set((base.get(TEST) or {}).get("failing") or [])
    tests_ok = test is not None and not is_new_problem(test, base.get(TEST))
    if test is not None and not test.ok and tests_ok:
        for failure in run["failures"]:
            failure["pre_existing"] = True
    else:
        for failure in run["failures"]:
            if failure.get("name") in pre_existing:
                failure["pre_existing"] = True
    others_failed = [
        c for c in checks if c.kind != TEST and is_new_problem(c, base.get(c.kind))
    ]
    recommendation = result["recommendation"]
    items = [str(item) for item in result.get("feedback_items") or []]
    criteria = _criteria(
        result["acceptance_criteria"],
        _short_names(run["failures"]) if not tests_ok else [],
    )
    if not tests_ok:
        recommendation = "request_changes"
        items = [
            f"Fix failing test {f['name']}: {f['error']}".strip(": ")
            for f in run["failures"]
            if not f.get("pre_existing")
        ] + items
    for check in others_failed:
        label = CHECK_LABELS.get(check.kind, check.kind)
        run["failures"].append(
            {
                "name": f"{label}: {check.command}",
                "error": f"{check.describe()}: " + check.output[-ERROR_CHARS:],
                "check": check.kind,
            }
        )
        items.append(
            f"Make the {label} command `{check.command}` pass ({check.describe()})."
        )
        if _checks_block():
            recommendation = "request_changes"
    if any(c.get("status") != "passed" for c in criteria):
        recommendation = "request_changes"
    feedback: dict[str, Any] = {"checks": [check_summary(c) for c in checks]}
    known = [f["name"] for f in run["failures"] if f.get("pre_existing")]
    known += [
        f"{CHECK_LABELS.get(c.kind, c.kind)}: {c.command}"
        for c in checks
        if c.kind != TEST and not c.ok and c not in others_failed
    ]
    if known:
        # Reported, not the developer's to fix (agents.baseline).
        feedback["pre_existing_failures"] = known
    if recommendation == "request_changes":
        summary = result["summary"]
        if not tests_ok:
            summary = f"{run['tests_failed'] or 'some'} test(s) failed: {summary}"
        feedback.update(
            priority="high" if not tests_ok or others_failed else "medium",
            summary=summary,
            items=items,
        )
        failed = [c for c in checks if not c.ok]
        if test is not None:
            feedback["test_command"] = test.command
            feedback["test_output"] = test.output[-OUTPUT_TAIL_CHARS:]
        if failed:
            feedback["check_outputs"] = {
                c.kind: c.output[-OUTPUT_TAIL_CHARS:] for c in failed
            }
    verification: dict[str, Any] = {
        **run,
        "acceptance_criteria": criteria,
        "recommendation": recommendation,
        "feedback": feedback,
    }
    record_build(context, checks, run["failures"], tests_ok, others_failed)
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


ROLE = Role(
    name="qa",
    phase="verification",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
)
