"""`manage.py demo`: one feature request through all six phases, scripted.

A newcomer's first look at the pipeline without a Claude key or GitHub. The
demo

- (re)creates <root>/sample.git, a bare repository on the local forge holding
  a tiny Python project (calc.py with add() and its pytest test, on main), and
  registers it as a Repository (file:// URL) unless it already is;
- starts the scripted Messages API on loopback (agents/scripted_model.py's
  ModelStub) with one pre-recorded conversation per phase, so the real
  anthropic SDK and the real AgentPhaseRunner do the work: the developer's
  write_file becomes a commit, the QA phase runs pytest for real, the release
  merges the pull request into main;
- creates the feature request as a task (created_by "manual", actor "demo")
  and runs advance_task until the task ends, with the settings pointing at the
  stub and at <root> overridden in this process only;
- prints the task, its phases, artifacts, reports, events, the new head of
  main in the bare repository, and where to look in the console.

Running it again resets the demo: the bare repository is created afresh (the
scripted conversation adds mul() to the seed project, so it needs the seed),
and the demo's mirrors and worktrees are removed. The Repository row and the
earlier demo tasks stay, so every run adds one task to the same repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

from django.test.utils import override_settings

from codex.core.addresses import console_base_url
from integrations.jail import SYSTEM_PATH

if TYPE_CHECKING:
    from codex.repositories.models import Repository
    from codex.tasks.models import Task

BANNER = "SCRIPTED DEMO: the model answers are pre-recorded, no real Claude is called"
REPOSITORY_NAME = "sample"
ACTOR = "demo"
MAX_STEPS = 20  # six phases take six steps; a loop back takes more

CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
README = "# sample\n\nA tiny calculator, the Codex demo's repository.\n"
MUL = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST_MUL = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
TITLE = "Add multiplication"
DESCRIPTION = "As a user of calc, I want mul(a, b) next to add(a, b)."
CRITERIA = "- mul(2, 3) == 6\n- add keeps working"
SPEC = (
    "# Feature: multiply\n\n## Overview\nA mul(a, b) function in calc.py.\n\n"
    "## Acceptance Criteria\n- mul(2, 3) == 6\n- add keeps working\n"
)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Codex demo",
    "GIT_AUTHOR_EMAIL": "demo@localhost",
    "GIT_COMMITTER_NAME": "Codex demo",
    "GIT_COMMITTER_EMAIL": "demo@localhost",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
        text=True,
    ).stdout


PHASES = ("intake", "planning", "implementation", "verification", "review", "release")


@dataclass(frozen=True)
class ScriptedChange:
    """What one scripted conversation asks for and does: spec.md the product
    manager writes, the plan, the files the developer writes (path: content),
    the acceptance criteria QA judges (criterion, evidence) and the release
    notes. The demo has one; tests/live_pipeline.py makes one per task."""

    spec: str
    plan: str
    files: dict[str, str]
    summary: str
    commit_message: str
    criteria: tuple[tuple[str, str], ...]
    release_notes: str
    analysis: dict[str, Any] = field(default_factory=dict)
    qa_summary: str = "The tests pass."


DEMO_CHANGE = ScriptedChange(
    spec=SPEC,
    plan="# Implementation Plan\n\nAdd mul to calc.py, test it.",
    files={"calc.py": MUL, "test_mul.py": TEST_MUL},
    summary="Added mul and its test.",
    commit_message="Add mul",
    criteria=(("mul(2, 3) == 6", "test_mul"), ("add keeps working", "test_add")),
    release_notes="Adds calc.mul(a, b).",
    analysis={
        "files": [{"path": "calc.py", "purpose": "mul", "action": "modify"}],
        "test_requirement": {"required": True, "type": "unit"},
        "must_not_do": ["change add"],
        "brief": "Add mul next to add in calc.py, with a pytest test.",
    },
    qa_summary="Both tests pass.",
)


def conversation(change: ScriptedChange) -> dict[str, list]:
    """The model's answers for each phase, turn by turn, for `change`.

    Built afresh on every call (each tool_use gets a new id), so a responder
    serving many conversations can call it per request."""
    from agents.scripted_model import message, submit, tool_use

    return {
        # intake (product manager): look at the code, then write spec.md
        "intake": [
            message("Looking at the code first.", tool_use("list_files", {})),
            submit(
                {
                    "should_proceed": True,
                    "needs_clarification": False,
                    "spec_md": change.spec,
                    "triage": {
                        "type": "NEW_FEATURE",
                        "scope": "SMALL",
                        "complexity": "simple",
                        "labels": ["enhancement"],
                    },
                }
            ),
        ],
        "planning": [
            submit(
                {
                    "plan_md": change.plan,
                    "tasks": [{"title": change.commit_message}],
                    "analysis": change.analysis,
                }
            )
        ],
        # implementation (developer): every file in one turn, then the summary
        "implementation": [
            message(
                *(
                    tool_use("write_file", {"path": path, "content": content})
                    for path, content in change.files.items()
                )
            ),
            submit(
                {
                    "summary": change.summary,
                    "commit_message": change.commit_message,
                    "tasks_completed": 1,
                }
            ),
        ],
        # verification (QA): the runner runs pytest for real before this
        "verification": [
            submit(
                {
                    "acceptance_criteria": [
                        {"criterion": criterion, "met": True, "evidence": evidence}
                        for criterion, evidence in change.criteria
                    ],
                    "recommendation": "approve",
                    "summary": change.qa_summary,
                }
            )
        ],
        "review": [
            submit(
                {
                    "assessment": "approve",
                    "summary": "Small and clear.",
                    "comments": [],
                    "good": ["The change comes with a test of its own."],
                    "security": {"vulnerabilities_found": 0, "items": []},
                }
            )
        ],
        "release": [submit({"release_notes": change.release_notes, "merge": True})],
    }


def script() -> list:
    """The pre-recorded model answers, in the order the phases ask for them."""
    replies = conversation(DEMO_CHANGE)
    return [reply for phase in PHASES for reply in replies[phase]]


SEED = {"calc.py": CALC, "test_calc.py": TEST_CALC, "README.md": README}


def create_bare_repository(
    root: Path, name: str = REPOSITORY_NAME, seed: dict[str, str] | None = None
) -> Path:
    """<root>/<name>.git afresh, main holding one commit of `seed` (path:
    content; by default calc.py, its test and a README)."""
    bare = root / f"{name}.git"
    if bare.exists():
        shutil.rmtree(bare)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as seed_dir:
        work = Path(seed_dir)
        for path, content in (SEED if seed is None else seed).items():
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_text(content)
        git("init", "--quiet", "-b", "main", cwd=work)
        git("add", "--all", cwd=work)
        git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "seed", cwd=work)
        git("clone", "--quiet", "--bare", str(work), str(bare), cwd=root)
    return bare


def register(bare: Path) -> Repository:
    from codex.repositories.models import Repository

    repository, _ = Repository.objects.get_or_create(url=f"file://{bare.absolute()}")
    return repository


def demo_settings(root: Path, stub_url: str) -> dict[str, Any]:
    """What the demo overrides, in this process only."""
    from django.conf import settings

    toolchain = demo_toolchain()
    return {
        "CODEX_PHASE_RUNNER": "agents.phase_runner.AgentPhaseRunner",
        "ANTHROPIC_BASE_URL": stub_url,
        "CODEX_CREDENTIALS": {
            **settings.CODEX_CREDENTIALS,
            "claude": ["scripted-demo-key"],
        },
        "CODEX_WORKTREE_ROOT": str(root / "worktrees"),
        "CODEX_MIRROR_ROOT": str(root / "mirrors"),
        "CODEX_MODEL_MAX_RETRIES": 0,
        # The issue's progress comment is edited after each step the demo
        # drives (on the local forge, no rate limit to respect): at once, not
        # five seconds after the last edit.
        "CODEX_PROGRESS_MIN_SECONDS": 0,
        "CODEX_RELEASE_REQUIRES_APPROVAL": False,
        "CODEX_TEST_COMMAND": "python -B -m pytest -q -p no:cacheprovider",
        "CODEX_TEST_COMMANDS": {},
        # The QA phase's pytest, from a toolchain bound read-only into the jail.
        "CODEX_SANDBOX_PATH": f"{toolchain / 'bin'}:{SYSTEM_PATH}",
        "CODEX_SANDBOX_READONLY_PATHS": toolchain_paths(toolchain),
        "CODEX_SANDBOX_ENV": {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        # Notifications go out by email through Django's file backend (one
        # file per message under var/demo/mail), unless the console says else.
        "CODEX_NOTIFY_CHANNELS": "email",
        "CODEX_NOTIFY_EMAIL_TO": "team@example.com",
        "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
        "EMAIL_FILE_PATH": str(root / "mail"),
    }


def demo_toolchain() -> Path:
    """The Python environment with pytest the sample project is tested with:
    `make demo`'s own (var/toolchains/pytest), else the one running this."""
    from django.conf import settings

    made = Path(settings.BASE_DIR) / "var" / "toolchains" / "pytest"
    if (made / "bin" / "pytest").exists():
        return made
    return Path(sys.prefix)


def toolchain_paths(venv: Path) -> list[str]:
    """The folders a virtual environment needs inside the jail: itself and
    the Python installation it was made from (pyvenv.cfg's `home`)."""
    paths = {str(venv.absolute())}
    config = venv / "pyvenv.cfg"
    if config.exists():
        for line in config.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                home = Path(value.strip())
                paths.add(str(home.parent if home.name == "bin" else home))
    return sorted(paths)


@contextmanager
def steps_driven_here():
    """The demo runs the task's steps itself: the next-step jobs that
    advance_task enqueues for a worker are dropped meanwhile (a worker from
    `make run` would otherwise run a step without the scripted settings).
    Every other job is enqueued as usual."""
    from django_q import tasks as q_tasks

    from codex.tasks.jobs import ADVANCE_JOB

    original = q_tasks.async_task

    def async_task(func, *args, **kwargs):
        if func == ADVANCE_JOB:
            return None
        return original(func, *args, **kwargs)

    with mock.patch.object(q_tasks, "async_task", async_task):
        yield


@dataclass
class DemoResult:
    task: Task
    steps: list[str] = field(default_factory=list)
    bare: Path | None = None
    main_log: str = ""
    mail_dir: Path | None = None


def run_demo(root: Path, out: Callable[[str], None] = print) -> DemoResult:
    """The whole demo; `out` prints a line. Returns the task and the steps."""
    from agents.scripted_model import ModelStub
    from codex.tasks.jobs import advance_task
    from codex.tasks.models import CreatedBy, Status, Task
    from codex.tasks.progress import update_progress_comment

    root = root.absolute()
    rule = "=" * len(BANNER)
    out(rule)
    out(BANNER)
    out(rule)
    bare = create_bare_repository(root)
    for scratch in ("mirrors", "worktrees"):
        shutil.rmtree(root / scratch, ignore_errors=True)
    repository = register(bare)
    # One gate (docs/gates.md): a person other than the requester approves
    # the merge; the demo's reviewer does, on the task's behalf.
    repository.merge_gate = "approval"
    repository.save(update_fields=["merge_gate"])
    out(f"Sample repository: {repository.url} (local forge, main = calc.py + test)")
    out("Merge gate: approval (a person other than the requester approves)")
    out(jail_line())

    with ModelStub(script()) as stub:
        out(f"Scripted Messages API on {stub.url}")
        with override_settings(**demo_settings(root, stub.url)), steps_driven_here():
            task, _ = Task.objects.create_from_request(
                repository=repository,
                title=TITLE,
                description=DESCRIPTION,
                acceptance_criteria=CRITERIA,
                created_by=CreatedBy.MANUAL,
                actor=ACTOR,
                issue_number=DEMO_ISSUE,
            )
            out(f"Feature request {task.task_id}: {TITLE!r} (issue #{DEMO_ISSUE})")
            result = DemoResult(task=task, bare=bare)
            for _ in range(MAX_STEPS):
                phase = Task.objects.get(pk=task.pk).phase
                done = advance_task(task.task_id)
                result.steps.append(done)
                out(f"  step {len(result.steps)}: {phase:<15} -> {done}")
                task.refresh_from_db()
                update_progress_comment(task.task_id)  # the scheduled job's work
                if task.status == Status.ESCALATED and task.open_gate is not None:
                    approve_as_reviewer(task, out)
                    continue
                if task.status not in (Status.PENDING, Status.IN_PROGRESS):
                    break  # completed, or stopped: blocked, escalated, failed
            from codex.notifications.jobs import drain_outbox

            drain_outbox()  # what the scheduled outbox job would send now
            result.mail_dir = root / "mail"
    result.main_log = git("log", "--format=%h %s", "main", cwd=bare) + git(
        "show", "--stat", "--format=", "main", cwd=bare
    )
    report(result, out)
    return result


DEMO_ISSUE = 1
DEMO_REVIEWER = "user:demo-reviewer"


def approve_as_reviewer(task, out: Callable[[str], None]) -> None:
    """The demo's reviewer answers the escalation of the gate the task waits
    at with an approval, as in the inbox (the requester could not:
    docs/gates.md)."""
    from codex.tasks.models import Decision

    gate = task.open_gate
    out(f"  escalated ({gate.escalation.get_reason_display().lower()}): {gate.reason}")
    task.resolve_escalation(
        gate.escalation,
        decision=Decision.APPROVE,
        by=DEMO_REVIEWER,
        subject=gate.subject,
    )
    out(f"  approved by {DEMO_REVIEWER} at {gate.subject[:12]}")


def progress_comment(task) -> str:
    """The task's progress comment on its issue, as the local forge holds it."""
    from codex.repositories.models import LocalComment
    from codex.tasks.progress import progress_marker

    found = LocalComment.objects.filter(
        issue__repository=task.repository,
        issue__number=task.issue_number,
        body__contains=progress_marker(task),
    ).first()
    return found.body if found else ""


def console_command() -> str:
    """How to open the console on the database the demo wrote to: its own
    (agents.isolation), so `make run` alone does not show it."""
    from django.conf import settings

    from agents.isolation import own_state

    if own_state() == "demo":
        return f"CODEX_VAR_DIR={settings.VAR_DIR} make run"
    return "make run"


def jail_line() -> str:
    """Where the agents' and QA's commands run, or why they cannot."""
    from integrations.jail import JailUnavailable, configured_backend

    try:
        backend = configured_backend()
    except JailUnavailable as exc:
        return (
            f"Command jail: UNAVAILABLE ({exc.reason}); the task will escalate. "
            f"Fix: {exc.fix}"
        )
    if not backend.jailed:
        return "Command jail: NONE (CODEX_SANDBOX=none): commands run unjailed"
    return (
        f"Command jail: {backend.name} (no network, no secrets, only the "
        "worktree writable)"
    )


def report(result: DemoResult, out: Callable[[str], None]) -> None:
    from codex.tasks.models import ReviewReport, VerificationReport

    task = result.task
    out("")
    out(f"Task {task.task_id}: status {task.status}, phase {task.phase}")
    if task.status != "completed":
        out(f"  it stopped early: {getattr(task, 'blocked_reason', '') or '-'}")
    out(f"  branch {task.branch}, pull request {task.pr_url or '-'}")
    events = task.events.order_by("created_at", "id")
    out(f"Phases ({events.count()} events; status and phase changes shown):")
    for event in events.filter(kind__in=("created", "transition")):
        change = f"{event.source} -> {event.target}" if event.source else event.target
        out(f"  {event.field or 'status':<7} {change:<32} {event.reason}"[:120])
    tools = list(task.events.filter(kind="tool").values_list("data__tool", flat=True))
    out(f"Tool calls ({len(tools)}): {', '.join(str(t) for t in tools)}")
    out("Artifacts:")
    for artifact in task.artifacts.order_by("created_at", "id"):
        first = (artifact.content.strip().splitlines() or [""])[0]
        out(f"  {artifact.name:<18} {first[:80]}")
    out("Reports:")
    for verification in VerificationReport.objects.filter(task=task):
        out(
            f"  verification: {verification.recommendation}, tests "
            f"{verification.tests_passed} passed / {verification.tests_failed} "
            f"failed / {verification.tests_total} total"
        )
    for review in ReviewReport.objects.filter(task=task):
        out(f"  review: {review.assessment}")
    out("Notifications:")
    for note in task.notifications.order_by("created_at", "id"):
        out(f"  {note.channel:<6} {note.status:<7} to {note.recipient}: {note.subject}")
    if result.mail_dir is not None and result.mail_dir.exists():
        out(f"  (the email files are in {result.mail_dir})")
    out(f"The progress comment on issue #{task.issue_number} (one, edited in place):")
    for line in progress_comment(task).splitlines():
        if line.strip() and not line.startswith("<!--"):
            out(f"  | {line}"[:120])
    out(f"main in {result.bare}:")
    for line in result.main_log.splitlines()[:10]:
        out(f"  {line}")
    out(f"See it in the console ({console_command()}, then log in):")
    console = console_base_url()
    out(f"  {console}/admin/tasks/task/{task.pk}/change/")
    out(f"  {console}/tasks/{task.task_id}/")
