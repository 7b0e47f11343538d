"""QA (verification): the repository's test, lint and type-check commands are
run for real before the agent starts (`run_checks`); the agent judges each
acceptance criterion with evidence; this module writes the verification
report (spec 002 §4.4), in which the real runs overrule whatever the agent
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

import os
import re
import shlex
import shutil
import stat
import tempfile
import xml.parsers.expat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from xml.etree.ElementTree import Element, TreeBuilder

from django.conf import settings

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
JUNIT_MAX_BYTES = 5_000_000
MAX_FAILURES = 100
ERROR_CHARS = 1000
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


def run_checks(sandbox: Sandbox, repository: Repository) -> list[CheckRun]:
    """Run every configured command in the sandbox, the tests first."""
    return [
        run_check(sandbox, kind, command)
        for kind, command in configured_commands(repository)
    ]


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


# -- JUnit XML ----------------------------------------------------------------------


class JUnitError(Exception):
    """A JUnit XML file that is missing, too large or refused."""


_LOCATION = re.compile(r"^(?P<file>[^\s:]+\.\w+):(?P<line>\d+):", re.MULTILINE)


def _read_capped(path: Path, limit: int) -> bytes:
    """The file's bytes: a regular file (no symlink followed), at most `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise JUnitError("the test command wrote no JUnit XML") from None
    except OSError as exc:
        raise JUnitError(f"the JUnit XML cannot be opened: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise JUnitError("the JUnit XML is not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise JUnitError(f"the JUnit XML is larger than {limit} bytes; not read")
    return data


def _parse_xml(data: bytes) -> Element:
    """Parse with expat, refusing any DOCTYPE (so no entity can be declared,
    let alone expanded) in whatever encoding the document claims."""
    builder = TreeBuilder()
    parser = xml.parsers.expat.ParserCreate()

    def refuse(*_: Any) -> None:
        raise JUnitError("the JUnit XML has a DOCTYPE; refused")

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = lambda name: builder.end(name)
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        raise JUnitError(f"the JUnit XML is not well-formed: {exc}") from None
    return builder.close()


def parse_junit(path: Path, *, limit: int = JUNIT_MAX_BYTES) -> dict[str, Any]:
    """Counts and failing tests from a JUnit XML file written by untrusted
    code: size-capped, symlinks refused, DOCTYPE refused. Returns the report's
    tests_passed, tests_failed (failures and errors), tests_skipped,
    tests_total and failures [{name, error, file, line}]."""
    root = _parse_xml(_read_capped(path, limit))
    if root.tag not in ("testsuites", "testsuite"):
        raise JUnitError(f"not JUnit XML (root element {root.tag!r})")
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failures: list[dict[str, Any]] = []
    for case in root.iter("testcase"):
        outcome = "passed"
        problem = None
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, problem = "failed", child
                break
            if child.tag == "skipped":
                outcome = "skipped"
        counts[outcome] += 1
        if problem is None or len(failures) >= MAX_FAILURES:
            continue
        classname, name = case.get("classname", ""), case.get("name", "?")
        text = problem.text or ""
        message = problem.get("message") or text.strip().splitlines()[-1:] or [""]
        if isinstance(message, list):
            message = message[0]
        failure: dict[str, Any] = {
            "name": f"{classname}::{name}" if classname else name,
            "error": message.strip()[:ERROR_CHARS],
        }
        locations = list(_LOCATION.finditer(text))
        location = locations[-1] if locations else None
        if case.get("file"):
            failure["file"] = case.get("file")
            if (case.get("line") or "").isdigit():
                failure["line"] = int(case.get("line"))
        elif location is not None:
            failure["file"] = location["file"]
            failure["line"] = int(location["line"])
        failures.append(failure)
    return {
        "tests_passed": counts["passed"],
        "tests_failed": counts["failed"],
        "tests_skipped": counts["skipped"],
        "tests_total": sum(counts.values()),
        "failures": failures,
    }


# -- pytest's text output (no JUnit XML) -----------------------------------------

_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)


def parse_pytest(output: str) -> dict[str, Any]:
    """Counts and failures from pytest's summary lines (-q or not)."""
    counts = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
    summary = ""
    for line in reversed(output.splitlines()):
        if _COUNT.search(line):
            summary = line
            break
    for number, word in _COUNT.findall(summary):
        key = {"errors": "error", "xfailed": "skipped", "xpassed": "passed"}.get(
            word, word
        )
        counts[key] += int(number)
    failures = [
        {"name": name, "error": (error or "").strip()[:ERROR_CHARS]}
        for name, error in _FAILED.findall(output)
    ][:MAX_FAILURES]
    return {
        "tests_passed": counts["passed"],
        "tests_failed": counts["failed"] + counts["error"],
        "tests_skipped": counts["skipped"],
        "tests_total": sum(counts.values()),
        "failures": failures,
    }


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
    tests_ok = test is not None and test.ok
    others_failed = [c for c in checks if c.kind != TEST and not c.ok]
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
    return PhaseResult(verification=verification)


ROLE = Role(
    name="qa",
    phase="verification",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
)
