"""The repository map as the planner and the developer see it in their first
message (docs/agents.md#prompt): fenced as the repository's content, the
files the branch changed and those the analysis names put first."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING

from django.conf import settings

from agents.prompts import untrusted
from agents.repo_map import repository_map
from codex.core.errors import ClassifiedFailure
from integrations.git import head_sha, run_git

if TYPE_CHECKING:
    from agents.roles.base import Step

INTRODUCTION = (
    "A map of the repository at {commit} (its classes, functions and methods "
    "with their line numbers, the most used across files first; the files "
    "this change touches come first). Read a file for the details:"
)
FOCUS_MAX = 200


def repository_outline(step: Step) -> str:
    """The map for `step`'s prompt, "" when it is off or cannot be made."""
    budget = int(getattr(settings, "CODEX_AGENT_REPO_MAP_TOKENS", 0))
    if budget <= 0:
        return ""
    try:
        commit = head_sha(step.worktree)
        changed = run_git(
            ["diff", "--name-only", f"{step.base_ref}...HEAD"], step.worktree
        ).split("\n")
    except ClassifiedFailure:
        return ""
    focus = [name for name in changed if name][:FOCUS_MAX] + _analysis_files(step)
    text = repository_map(
        step.worktree, commit=commit, budget_tokens=budget, focus=focus
    )
    if not text:
        return ""
    return (
        INTRODUCTION.format(commit=commit[:12])
        + "\n"
        + untrusted("the repository map, made from its code", text, raw=True)
    )


def warm_in_background(step: Step) -> threading.Thread | None:
    """Start building the map of `step`'s commit while an earlier role
    works, so that the planner's map, on a large repository, is read from
    the cache (a daemon thread; a failure only leaves the cache cold)."""
    budget = int(getattr(settings, "CODEX_AGENT_REPO_MAP_TOKENS", 0))
    if budget <= 0:
        return None
    try:
        commit = head_sha(step.worktree)
    except ClassifiedFailure:
        return None
    thread = threading.Thread(
        target=repository_map,
        args=(step.worktree,),
        kwargs={"commit": commit, "budget_tokens": budget},
        name=f"repo-map-{step.task.task_id}",
        daemon=True,
    )
    thread.start()
    return thread


def _analysis_files(step: Step) -> list[str]:
    """The files the planner's analysis names (written by a model: only
    strings are taken, as paths to put first)."""
    try:
        analysis = json.loads(step.documents.get("analysis.json") or "{}")
    except ValueError:
        return []
    files = analysis.get("files") if isinstance(analysis, dict) else None
    names = []
    for entry in files if isinstance(files, list) else []:
        name = entry.get("path") if isinstance(entry, dict) else entry
        if isinstance(name, str) and name:
            names.append(name)
    return names[:FOCUS_MAX]
