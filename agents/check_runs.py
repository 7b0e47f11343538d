"""QA's checks run for real in the jail of the task's worktree, and what came
of them (docs/domain/tasks.md#verification-report).

The commands come from the repository (`Repository.test_command`,
`lint_command`, `type_check_command`, editable in the admin and the API),
else from the settings: CODEX_TEST_COMMANDS[full_name or url], then the
detected test command (agents.ecosystems), then CODEX_TEST_COMMAND for tests;
CODEX_LINT_COMMAND and CODEX_TYPE_CHECK_COMMAND for the others, which are not
run when empty. On a branch, the tests near the change run first as a check
of their own (agents.ecosystems.nearby), then the whole suite. A test command containing
`{junit_xml}` gets a path outside the worktree there; the JUnit XML the
command writes is parsed (safely: it comes from the repository's own code,
agents.check_reports) for counts and failing tests. Without it, pytest's
summary lines are read. agents.roles.qa writes the report from these runs;
agents.baseline runs the same commands on the base commit.
"""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agents.check_reports import JUnitError, parse_junit, parse_pytest
from agents.ecosystems.nearby import nearby_command
from agents.tools import ToolError
from integrations.jail import JailUnavailable

if TYPE_CHECKING:
    from agents.sandbox import Sandbox
    from codex.repositories.models import Repository

DEFAULT_TEST_COMMAND = (
    "python -B -m pytest -q -p no:cacheprovider --junitxml={junit_xml}"
)
JUNIT_PLACEHOLDER = "{junit_xml}"
# The checks, in the order they run and are reported.
TEST, LINT, TYPE_CHECK = "test", "lint", "type_check"
# The tests near the change: run before the whole suite, which includes them.
NEARBY = "test_nearby"
CHECK_LABELS = {
    NEARBY: "tests near the change",
    TEST: "test",
    LINT: "lint",
    TYPE_CHECK: "type-check",
}


# -- which commands ----------------------------------------------------------


def test_command(repository: Repository) -> str:
    """The repository's test command: its own, else CODEX_TEST_COMMANDS[full
    name or url], else the detected one, else CODEX_TEST_COMMAND, else
    DEFAULT_TEST_COMMAND."""
    per_repository = getattr(settings, "CODEX_TEST_COMMANDS", None) or {}
    detected = getattr(repository, "detected_environment", None) or {}
    return (
        (getattr(repository, "test_command", "") or "").strip()
        or per_repository.get(repository.full_name)
        or per_repository.get(repository.url)
        or str(detected.get("test_command") or "").strip()
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
    """Run every configured command in the sandbox, each within the
    repository's check timeout: the tests near the branch's change first
    (when its runner can be narrowed to them), then the whole suite, then
    the others."""
    checking = _check_sandbox(sandbox, check_timeout(repository))
    commands = configured_commands(repository)
    base = f"origin/{getattr(repository, 'default_branch', '') or 'main'}"
    nearby = nearby_command(sandbox.root, base, commands[0][1])
    if nearby:
        commands.insert(0, (NEARBY, nearby))
    return [run_check(checking, kind, command) for kind, command in commands]


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
