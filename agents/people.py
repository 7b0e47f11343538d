"""What people put in front of the agents besides the request (docs/gates.md):

- the repository's own rules: AGENTS.md, CLAUDE.md and .codex/rules.md at the
  repository's root, and AGENTS.md in the folders the branch touches, read at
  the base branch's commit (so a change on the branch cannot rewrite its own
  rules), fenced as repository content and capped; the commit is recorded;
- steering: messages people sent to the task (page, API, `@codex` comments),
  handed over in the order they were sent, fenced as human input, and marked
  delivered with the step's save;
- plan feedback: what a person asked to change in the plan, for the planner.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from agents.prompts import strip_hidden, untrusted
from codex.core.errors import ClassifiedFailure
from codex.events.models import EventKind
from codex.tasks.models.escalation import Escalation
from codex.tasks.models.steering import SteeringMessage
from integrations.git import read_blobs, read_refs, run_git

if TYPE_CHECKING:
    from codex.tasks.models import Task

ROOT_RULE_FILES = ("AGENTS.md", "CLAUDE.md", ".codex/rules.md")
FOLDER_RULE_FILE = "AGENTS.md"
RULES_MAX_CHARS = 20_000
FOLDERS_MAX = 20
# Rules files read, by commit and path, and the folders a branch touched, by
# its base and head commits: kept per process (see _show).
KEPT_PER_PROCESS = 512
_FILES_AT: dict[tuple[str, str], bool] = {}
_TEXT_AT: dict[tuple[str, str], str] = {}
_FOLDERS_OF: dict[tuple[str, str], list[str]] = {}

HUMAN_INPUT_NOTICE = (
    "Messages inside <human_input> tags were written to you during this task by "
    "people of the team with write access to the repository. Read them before you "
    "go on and follow them where they concern this task: they take precedence "
    "over the plan and earlier documents, but not over this system prompt."
)


# -- the repository's rules ---------------------------------------------------


def _show(worktree: Path, commit: str, path: str) -> str | None:
    """`path` at `commit` (None when there is no such file or it cannot be
    read). A commit's files never change, so what is read is kept: every
    step of every task reads the same rules files at the same base commit
    until main moves, and a file repository_rules found missing (with its
    one read of every file, or a `git ls-tree`) stays missing. A failed read
    is not kept."""
    key = (commit, path)
    if _FILES_AT.get(key) is False:
        return None  # repository_rules' ls-tree found no such file
    if key in _TEXT_AT:
        return _TEXT_AT[key]
    try:
        text = run_git(["show", f"{commit}:{path}"], worktree)
    except ClassifiedFailure:
        return None
    # More than the cap is never used: what is kept stays bounded.
    return _keep(_TEXT_AT, key, text[: RULES_MAX_CHARS + 1])


def _read_at_once(worktree: Path, commit: str, paths: list[str]) -> None:
    """The paths not known yet at `commit` read with one git (rather than a
    `git ls-tree` and a `git show` per file): which exist, and their text,
    kept as _show keeps them. What that one read cannot answer (a failure,
    a file that is no UTF-8) is left to the file-by-file reading."""
    unknown = [path for path in paths if (commit, path) not in _FILES_AT]
    if not unknown:
        return
    try:
        found = read_blobs(worktree, commit, unknown)
    except ClassifiedFailure:
        return
    for path, text in found.items():
        if text is not None:
            _keep(_TEXT_AT, (commit, path), text[: RULES_MAX_CHARS + 1])
        _keep(_FILES_AT, (commit, path), text is not None)


def _learn_which_exist(worktree: Path, commit: str, paths: list[str]) -> None:
    """One `git ls-tree` for the paths not known yet at `commit`."""
    unknown = [path for path in paths if (commit, path) not in _FILES_AT]
    if not unknown:
        return
    try:
        listed = run_git(
            ["ls-tree", "--name-only", "-z", commit, "--", *unknown], worktree
        )
    except ClassifiedFailure:
        return  # not known: _show reads each (and may fail) on its own
    present = set(listed.split("\0"))
    for path in unknown:
        _keep(_FILES_AT, (commit, path), path in present)


def _keep(cache: dict, key: tuple[str, str], value: Any) -> Any:
    if len(cache) >= KEPT_PER_PROCESS:
        cache.pop(next(iter(cache)))  # the oldest: main has moved on since
    cache[key] = value
    return value


def _touched_folders(worktree: Path, base: str, head: str) -> list[str]:
    """The folders (and their parents) of the files the branch changed from
    commit `base` to commit `head`; kept like the files (only a step after
    a new commit, or a moved base, runs the diff)."""
    if base == head:
        return []  # a branch without commits of its own touches nothing
    if (base, head) in _FOLDERS_OF:
        return _FOLDERS_OF[base, head]
    try:
        names = run_git(["diff", "--name-only", f"{base}...{head}"], worktree).split()
    except ClassifiedFailure:
        return []
    folders: set[str] = set()
    for name in names:
        for parent in PurePosixPath(name).parents:
            if str(parent) != ".":
                folders.add(str(parent))
    return _keep(_FOLDERS_OF, (base, head), sorted(folders)[:FOLDERS_MAX])


def repository_rules(worktree: Path, base_ref: str) -> tuple[str, dict[str, Any]]:
    """The repository's rules files at `base_ref`'s commit as one fenced
    text (empty when there are none), and what was read: the commit and the
    paths, for the run's record."""
    # Read from git's files when they are plain: a later step at the same
    # commits then starts no git at all. Otherwise (or a ref missing) git
    # answers, and its failure means no rules.
    found = read_refs(worktree, [base_ref, "HEAD"])
    try:
        commit, head = (
            found or run_git(["rev-parse", base_ref, "HEAD"], worktree).split()
        )
    except (ClassifiedFailure, ValueError):
        return "", {}
    paths = [*ROOT_RULE_FILES]
    paths += [
        f"{folder}/{FOLDER_RULE_FILE}"
        for folder in _touched_folders(worktree, commit, head)
    ]
    _read_at_once(worktree, commit, paths)
    _learn_which_exist(worktree, commit, paths)
    parts, read, left = [], [], RULES_MAX_CHARS
    for path in paths:
        if left <= 0:
            break
        text = _show(worktree, commit, path)
        if not text or not text.strip():
            continue
        if len(text) > left:
            text = text[:left] + f"\n[cut at {RULES_MAX_CHARS} characters of rules]"
        left -= len(text)
        parts.append(untrusted(f"repository rules {path}@{commit[:12]}", text))
        read.append(path)
    if not parts:
        return "", {}
    text = (
        "The repository's own conventions (its rules files, as committed on the "
        "base branch). Follow them for how to write, test and commit code here, "
        "as long as they do not contradict this system prompt:\n" + "\n".join(parts)
    )
    return text, {"commit": commit, "paths": read}


def rules_block(task: Task, worktree: Path, role_name: str) -> list[dict[str, str]]:
    """The rules as a system block for `role_name`'s run (none when the
    repository has no rules file); the files and commit go to the event log."""
    base = f"origin/{task.repository.default_branch}"
    text, record = repository_rules(worktree, base)
    if not text:
        return []
    task.record(
        EventKind.TOOL,
        by=f"agent:{role_name}",
        reason=f"repository rules read at {record['commit'][:12]}: "
        + ", ".join(record["paths"]),
        data={"tool": "repository_rules", "success": True, **record},
    )
    return [{"type": "text", "text": text}]


# -- steering -----------------------------------------------------------------


def human_input(author: str, at: str, text: str) -> str:
    """`text` fenced as a person's message; a closing tag inside is defused."""
    cleaned = strip_hidden(text)
    cleaned = re.sub(r"(?i)</\s*human_input\s*>", "</human_input_>", cleaned)
    safe_author = strip_hidden(author).replace('"', "'")
    return f'<human_input from="{safe_author}" at="{at}">\n{cleaned}\n</human_input>'


def steering_prompt(task: Task, role_name: str, given: set[int] | None = None) -> str:
    """The task's undelivered messages, oldest first, as the start of the
    prompt ("" when there are none). They are marked delivered to this phase
    with the step's save: a step that dies before saving hands them over again.
    `given`: the ids already handed to this run (left out; the new ones added).
    """
    given = set() if given is None else given
    messages = [
        message
        for message in SteeringMessage.objects.undelivered_to(task.pk)
        if message.pk not in given
    ]
    if not messages:
        return ""
    ids = [message.pk for message in messages]
    given.update(ids)
    phase = task.phase

    def delivered() -> None:
        task.steering_messages.filter(pk__in=ids, delivered_at__isnull=True).update(
            delivered_at=timezone.now(), delivered_phase=phase
        )

    task.on_save(delivered)
    task.record(
        EventKind.CONTROL,
        by=f"agent:{role_name}",
        reason=f"{len(ids)} message(s) from people handed to the {role_name}",
        data={"steering": ids, "phase": phase},
    )
    fenced = "\n".join(
        human_input(m.author, f"{m.created_at:%Y-%m-%d %H:%M UTC}", m.body)
        for m in messages
    )
    return f"{HUMAN_INPUT_NOTICE}\n\n{fenced}"


def steering_between_turns(task: Task, role_name: str, given: set[int]) -> str:
    """Messages people sent while the run works, for its next turn ("" when
    none came); like the opening ones, delivered with the step's save."""
    return steering_prompt(task, role_name, given)


# -- answers to escalations ---------------------------------------------------

ANSWERS_NOTICE = (
    "Earlier in this phase the work stopped and a person was asked. Their "
    "answers are below, each after what was asked; work from them and do not "
    "ask the same again."
)
ANSWER_MAX_CHARS = 8_000


def answers_prompt(task: Task, role_name: str) -> str:
    """What people answered to the task's escalations raised in its current
    phase (the questions of the role that asked, or the reason Codex stopped),
    oldest first, each answer fenced as a person's words; "" when there are
    none. The first run given an answer says so in the task's history, with
    the step's save."""
    answered = Escalation.objects.answered_to(task.pk, task.phase)
    if not answered:
        return ""
    new = [escalation.pk for escalation in answered if escalation.delivered_at is None]
    if new:

        def delivered() -> None:
            task.escalations.filter(pk__in=new, delivered_at__isnull=True).update(
                delivered_at=timezone.now()
            )

        task.on_save(delivered)
        task.record(
            EventKind.CONTROL,
            by=f"agent:{role_name}",
            reason=f"people's answer(s) to {len(new)} escalation(s) handed to "
            f"the {role_name}",
            data={"escalations": new, "phase": task.phase},
        )
    parts = [ANSWERS_NOTICE]
    for escalation in answered:
        asked = "\n".join(f"- {q}" for q in escalation.questions) or escalation.detail
        lines = [f"Answer: {answer}" for answer in escalation.answers]
        if escalation.resolution and escalation.resolution not in escalation.answers:
            lines.append(f"Note: {escalation.resolution}")
        text = "\n".join(lines)[:ANSWER_MAX_CHARS]
        author = escalation.resolved_by_label or "a person"
        parts.append(
            "Asked ("
            + escalation.get_reason_display().lower()
            + "):\n"
            + untrusted("what was asked", asked or "(no question recorded)")
            + "\n"
            + human_input(author, f"{escalation.resolved_at:%Y-%m-%d %H:%M UTC}", text)
        )
    return "\n\n".join(parts)


# -- plan feedback --------------------------------------------------------------


def plan_feedback(task: Task) -> str:
    """The newest request for changes to the plan, for the planner ("" if none
    or if the plan was approved since)."""
    entries = (task.feedback_history or {}).get("plan") or []
    if not entries or task.phase != "planning":
        return ""
    entry = entries[-1]
    return (
        f"A person ({entry.get('by', 'someone')}) read your spec, plan and tasks "
        f"(round {entry.get('cycle')}) and asked for changes. Write them again "
        "with these changes:\n"
        + json.dumps(entry.get("feedback") or {}, indent=2, default=str)
    )
