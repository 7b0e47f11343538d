"""`@codex` commands in issue and pull-request comments.

    @codex status           reply with the task's status, phase and pull request
    @codex retry            unblock a blocked task now
    @codex cancel           cancel the task (at the end of the current step if a
                            worker is in one)
    @codex answer <text>    answer the task's open escalation; the task resumes
    @codex approve [<version>]  approve the plan (name its version) or the merge
                            the task waits for (docs/gates.md)
    @codex changes <text>   send the waiting plan back to the planner with <text>
    @codex steer <text>     a message the agent reads before its next step

Only people with write access are obeyed (and the requester alone never
approves); anyone else's command is ignored
without a reply (a reply per comment would let anyone make Codex comment at
will). Each command is answered by one comment, at most once per comment id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django_fsm import TransitionNotAllowed

from codex.core.store import LeaseUnavailable, VersionConflict
from codex.tasks.models import (
    Decider,
    GateDecision,
    GateKind,
    GateRefused,
    Status,
    SteeringSource,
    Task,
)
from codex.tasks.models.escalation import AlreadyResolved, Decision
from codex.tasks.models.steering import send_message

COMMAND = re.compile(
    r"^[ \t>]*@codex\b[ \t]+(?P<name>[A-Za-z-]+)(?:[ \t]+(?P<argument>.*))?$",
    re.MULTILINE,
)
# Commands whose text is the rest of the comment (it may span lines).
LONG_TEXT = ("answer", "changes", "steer")
LONG = re.compile(
    r"@codex[ \t]+(?P<name>answer|changes|steer)\b[ \t]*(?P<text>.*)",
    re.DOTALL | re.IGNORECASE,
)
COMMANDS = ("status", "retry", "cancel", "answer", "approve", "changes", "steer")
HELP = (
    "Commands: `@codex status`, `@codex retry`, `@codex cancel`, "
    "`@codex answer <your answer>`, `@codex approve [<plan version>]`, "
    "`@codex changes <what to change>`, `@codex steer <message>`."
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
        if name in LONG_TEXT:
            rest = LONG.search(body, match.start())
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
    gate = task.open_gate if task.status == Status.ESCALATED else None
    if gate is not None:
        lines.append(f"Waiting for a person: {gate.reason}")
        if gate.kind == GateKind.PLAN:
            lines.append(
                f"Reply with `@codex approve {gate.subject}` or "
                "`@codex changes <what to change>`."
            )
        elif gate.kind == GateKind.MERGE and gate.mode == "approval":
            lines.append("Reply with `@codex approve`.")
        return "\n".join(lines)
    escalation = task.escalations.open().first()
    if escalation is not None:
        lines.append(f"Waiting for an answer: {escalation.detail}")
        lines.extend(f"- {question}" for question in escalation.questions)
        lines.append("Reply with `@codex answer <your answer>`.")
    return "\n".join(lines)


def run_command(
    command: Command, task: Task | None, *, by: str, login: str = ""
) -> str:
    """Carry out `command` on `task` for `by` (the forge account `login`, who
    has write access: the caller checked); returns the reply to post."""
    if command.name not in COMMANDS:
        return f"I don't know `{command.name}`. {HELP}"
    if task is None:
        return "There is no Codex task for this conversation."
    try:
        if command.name in _GATE_COMMANDS:
            return _GATE_COMMANDS[command.name](task, command, by, login)
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
    if escalation.is_gate:
        # A gate has its own answers (docs/gates.md): a spend cap resumes
        # once raised; approvals come with `@codex approve`.
        if Decision.RESUME not in escalation.decisions:
            return f"{task.task_id} waits for a decision, not an answer.\n" + describe(
                task
            )
        try:
            task.resolve_escalation(
                escalation, decision=Decision.RESUME, by=by, resolution=command.argument
            )
        except GateRefused as refused:
            return f"Not accepted: {refused.reason}."
        except AlreadyResolved:
            return "That was already decided."
        return f"Thanks, {task.task_id} goes on."
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


def _decide(task: Task, command: Command, by: str, login: str, decision: str) -> str:
    gate = task.open_gate
    if gate is None:
        return f"{task.task_id} is not waiting for an approval."
    if decision == GateDecision.APPROVED:
        subject, feedback = command.argument.split(" ")[0], ""
    else:
        subject, feedback = gate.subject, command.argument
    if gate.kind == GateKind.PLAN and not subject:
        return f"Name the plan version you approve: `@codex approve {gate.subject}`."
    decider = Decider(label=by, login=login, may_approve=True)
    try:
        task.decide_gate(decision, decider=decider, subject=subject, feedback=feedback)
    except GateRefused as refused:
        return f"Not accepted: {refused.reason}."
    if decision == GateDecision.APPROVED:
        return f"Approved: {task.task_id} goes on."
    return f"Thanks, the plan of {task.task_id} goes back to the planner."


def _approve(task: Task, command: Command, by: str, login: str) -> str:
    return _decide(task, command, by, login, GateDecision.APPROVED)


def _changes(task: Task, command: Command, by: str, login: str) -> str:
    if not command.argument:
        return "Please say what should change after `@codex changes`."
    return _decide(task, command, by, login, GateDecision.CHANGES_REQUESTED)


def _steer(task: Task, command: Command, by: str, login: str) -> str:
    try:
        send_message(task, command.argument, author=by, source=SteeringSource.FORGE)
    except ValueError as exc:
        return f"Not sent: {exc}."
    return f"Noted: the agent of {task.task_id} reads it before its next step."


_GATE_COMMANDS = {"approve": _approve, "changes": _changes, "steer": _steer}

_COMMANDS = {
    "status": _status,
    "retry": _retry,
    "cancel": _cancel,
    "answer": _answer,
}
