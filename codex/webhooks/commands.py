"""`@codex` commands in issue and pull-request comments.

    @codex status           reply with the task's status, phase and pull request
    @codex retry            unblock a blocked task now
    @codex cancel           cancel the task (at the end of the current step if a
                            worker is in one)
    @codex answer <text>    answer the task's open escalation; the task resumes

Only people with write access are obeyed; anyone else's command is ignored
without a reply (a reply per comment would let anyone make Codex comment at
will). Each command is answered by one comment, at most once per comment id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django_fsm import TransitionNotAllowed

from codex.core.models import LeaseUnavailable, VersionConflict
from codex.tasks.models import Status, Task
from codex.tasks.models.escalation import AlreadyResolved, Decision

COMMAND = re.compile(
    r"^[ \t>]*@codex\b[ \t]+(?P<name>[A-Za-z-]+)(?:[ \t]+(?P<argument>.*))?$",
    re.MULTILINE,
)
ANSWER = re.compile(r"@codex[ \t]+answer\b[ \t]*(?P<text>.*)", re.DOTALL)
COMMANDS = ("status", "retry", "cancel", "answer")
HELP = (
    "Commands: `@codex status`, `@codex retry`, `@codex cancel`, "
    "`@codex answer <your answer>`."
)
BUSY = "the task is busy right now (a worker holds it); try again in a minute."


@dataclass(frozen=True)
class Command:
    """A parsed `@codex` command: its name and the text after it."""

    name: str
    argument: str = ""


def parse_command(body: str) -> Command | None:
    """The first `@codex <command>` line of a comment, or None. `answer` takes
    the rest of the comment (it may span lines); quoted lines (`>`) are
    skipped so that quoting an earlier command does not repeat it."""
    for match in COMMAND.finditer(body or ""):
        line = match.group(0)
        if line.lstrip().startswith(">"):
            continue
        name = match.group("name").lower()
        if name == "answer":
            rest = ANSWER.search(body, match.start())
            text = rest.group("text").strip() if rest else ""
            return Command(name, text)
        return Command(name, (match.group("argument") or "").strip())
    return None


def describe(task: Task) -> str:
    """A short account of where a task is, for `@codex status`."""
    lines = [
        f"**{task.task_id}**: {task.get_status_display().lower()}, "
        f"phase {task.get_phase_display().lower()}.",
        f"Pull request: {task.pr_url}" if task.pr_url else "No pull request yet.",
    ]
    if task.status == Status.BLOCKED and task.blocked_reason:
        lines.append(f"Blocked: {task.blocked_reason}")
    escalation = task.escalations.open().first()
    if escalation is not None:
        lines.append(f"Waiting for an answer: {escalation.detail}")
        lines.extend(f"- {question}" for question in escalation.questions)
        lines.append("Reply with `@codex answer <your answer>`.")
    return "\n".join(lines)


def run_command(command: Command, task: Task | None, *, by: str) -> str:
    """Carry out `command` on `task` for `by`; returns the reply to post."""
    if command.name not in COMMANDS:
        return f"I don't know `{command.name}`. {HELP}"
    if task is None:
        return "There is no Codex task for this conversation."
    try:
        return _COMMANDS[command.name](task, command, by)
    except (LeaseUnavailable, VersionConflict):
        return f"Could not {command.name} {task.task_id}: {BUSY}"
    except TransitionNotAllowed as exc:
        return f"Could not {command.name} {task.task_id}: {exc}"


def _status(task: Task, command: Command, by: str) -> str:
    return describe(task)


def _retry(task: Task, command: Command, by: str) -> str:
    if task.status != Status.BLOCKED:
        return (
            f"Nothing to retry: {task.task_id} is {task.get_status_display().lower()}."
        )
    task.perform("unblock", by=by, reason="retry requested on GitHub")
    return f"Retrying {task.task_id} now."


def _cancel(task: Task, command: Command, by: str) -> str:
    if task.is_terminal:
        return f"{task.task_id} is already {task.get_status_display().lower()}."
    task, waiting = task.request_control(
        "cancel", by=by, reason="cancel requested on GitHub"
    )
    if waiting:
        return f"{task.task_id} will be cancelled when its current step ends."
    return f"Cancelled {task.task_id}."


def _answer(task: Task, command: Command, by: str) -> str:
    if not command.argument:
        return "Please put your answer after `@codex answer`."
    escalation = task.escalations.open().first()
    if escalation is None:
        return f"{task.task_id} has no open question to answer."
    try:
        task.resolve_escalation(
            escalation,
            decision=Decision.RESUME,
            by=by,
            resolution=command.argument,
            answers=[command.argument],
        )
    except AlreadyResolved:
        return "That question was already answered."
    return f"Thanks, {task.task_id} continues with your answer."


_COMMANDS = {
    "status": _status,
    "retry": _retry,
    "cancel": _cancel,
    "answer": _answer,
}
