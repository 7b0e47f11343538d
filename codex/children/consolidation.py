"""A fan-out's consolidation pull request (docs/children.md#consolidation): the
children's branches merged into one branch, one pull request that references
each child's, its number kept as the analysis's `final_pr_number`.

An option (configuration `children.consolidation_pr`, off by default) for an
analysis that merges two or more children's pull requests. Codex builds the
branch itself, outside any jail: from the base branch, each child's pull
request head merged in the analysis's order with a merge commit of its own
(`integrations.git.merge_heads`), pushed as `codex/<parent task id>-children`.
The consolidation pull request is merged with a merge commit too, so every
child's head lands in the base branch and the forge sees each child's pull
request merged with it; the children's own merges then find them merged (or,
on the local forge, have nothing left to merge). Safe to run again: the
branch is reused while it holds every head, and the pull request is opened
once (perform_once, found again by its branch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codex.children.decision import MERGING_STRATEGIES
from codex.children.models import Child, CompletionAnalysis
from codex.core.errors import ClassifiedFailure
from codex.core.store import SideEffectUncertain, perform_once
from codex.repositories.models import MergeGate
from integrations.git import (
    branch_name,
    ensure_mirror,
    is_ancestor,
    merge_heads,
    ref_sha,
    run_git,
)

if TYPE_CHECKING:
    from codex.children.models import FanOut

SETTING = "children.consolidation_pr"
# The heads must stay ancestors of the base branch: never squashed.
MERGE_METHOD = "merge"


def consolidation_wanted(analysis: CompletionAnalysis) -> bool:
    """Whether the analysis's pull requests go in through one consolidation
    pull request: the option is on (read now) and it merges two or more."""
    from codex.configuration.config import get_config

    return (
        analysis.merge_strategy in MERGING_STRATEGIES
        and len(analysis.prs_to_merge) >= 2
        and bool(get_config(SETTING))
    )


def consolidation_branch(fan_out: FanOut) -> str:
    """`codex/<parent task id>-children`: beside the parent's own branch."""
    return f"{branch_name(fan_out.parent.task_id)}-children"


def consolidate(
    fan_out: FanOut, analysis: CompletionAnalysis, forge: Any
) -> tuple[int | None, str]:
    """Open (once) and, under the `auto` merge gate, merge the consolidation
    pull request of `analysis`. Returns (its number, why it stopped: "" when
    it merged)."""
    repository = fan_out.parent.repository
    try:
        pull = _open(fan_out, analysis, forge)
    except (ClassifiedFailure, SideEffectUncertain) as exc:
        return None, f"the consolidation pull request was not opened: {exc}"[:1000]
    number = int(pull["number"])
    if analysis.final_pr_number != number:
        CompletionAnalysis.objects.filter(pk=analysis.pk).update(final_pr_number=number)
        analysis.final_pr_number = number
    if pull["state"] == "merged":
        return number, ""
    if pull["state"] != "open":
        return number, f"the consolidation pull request #{number} is {pull['state']}"
    if repository.merge_gate != MergeGate.AUTO:
        return number, (
            f"the repository's merge gate is {repository.merge_gate}: a person "
            f"merges the consolidation pull request #{number}, which merges the "
            f"children's {_listing(analysis.prs_to_merge)}"
        )
    try:
        if pull.get("draft"):
            forge.mark_ready(number)
        sha = pull["head_sha"]
        perform_once(
            f"pr:merge:{repository.pk}:{number}:{sha}",
            lambda: dict(
                forge.merge_pull_request(number, sha=sha, method=MERGE_METHOD)
            ),
            lookup=lambda: (
                dict(found)
                if (found := forge.get_pull_request(number))["state"] == "merged"
                else None
            ),
            task=fan_out.parent,
            kind="pr",
        )
    except (ClassifiedFailure, SideEffectUncertain) as exc:
        return (
            number,
            f"the consolidation pull request #{number} was not merged: {exc}"[:1000],
        )
    return number, ""


def _open(fan_out: FanOut, analysis: CompletionAnalysis, forge: Any) -> dict:
    parent = fan_out.parent
    repository = parent.repository
    branch = consolidation_branch(fan_out)
    pulls = [forge.get_pull_request(n) for n in analysis.prs_to_merge]

    def open_it() -> dict:
        _push_branch(repository, forge, branch, _heads(fan_out, pulls))
        return dict(
            forge.create_pull_request(
                head=branch,
                base=repository.default_branch,
                title=f"{parent.title} ({parent.task_id}): the children's work",
                body=_body(fan_out, analysis, pulls),
            )
        )

    return perform_once(
        f"fanout:consolidation:{repository.pk}:{parent.task_id}",
        open_it,
        lookup=lambda: (
            None if (found := forge.find_pull_request(branch)) is None else dict(found)
        ),
        task=parent,
        kind="pr",
    )


def _push_branch(
    repository: Any, forge: Any, branch: str, heads: list[tuple[str, str]]
) -> str:
    """The consolidation branch on the forge, holding every head: the one
    pushed before when it still does, else built from the base and pushed."""
    credentials = forge.git_credentials()
    mirror = ensure_mirror(repository, forge.remote_url(), credentials)
    existing = ref_sha(mirror, f"refs/remotes/origin/{branch}")
    if existing and all(is_ancestor(mirror, sha, existing) for sha, _ in heads):
        return existing
    base = ref_sha(mirror, f"refs/remotes/origin/{repository.default_branch}")
    sha = merge_heads(mirror, base=base or repository.default_branch, heads=heads)
    run_git(
        ["push", "--quiet", "origin", f"{sha}:refs/heads/{branch}"], mirror, credentials
    )
    return sha


def _children_by_pr(fan_out: FanOut) -> dict[int, Child]:
    from codex.children.reporting import pr_number

    return {
        pr_number(child.task.pr_url): child
        for child in Child.objects.filter(fan_out=fan_out).select_related("task")
    }


def _heads(fan_out: FanOut, pulls: list[dict]) -> list[tuple[str, str]]:
    """Each child's head with its merge commit's message."""
    children = _children_by_pr(fan_out)
    heads = []
    for pull in pulls:
        child = children.get(pull["number"])
        who = f"{child.child_id}'s " if child else ""
        heads.append(
            (
                pull["head_sha"],
                f"Merge {who}pull request #{pull['number']} ({pull['head']}) for "
                f"{fan_out.parent.task_id}",
            )
        )
    return heads


def _body(fan_out: FanOut, analysis: CompletionAnalysis, pulls: list[dict]) -> str:
    """The consolidation pull request's description: each child's pull
    request, referenced, in the analysis's order."""
    children = _children_by_pr(fan_out)
    lines = [
        f"The work of {fan_out.parent.task_id}'s children, merged in one branch "
        f"({analysis.merge_strategy}):",
        "",
    ]
    for pull in pulls:
        child = children.get(pull["number"])
        who = f"{child.child_id}: " if child else ""
        lines.append(f"- {who}#{pull['number']} ({pull.get('title') or ''})")
    if fan_out.issue_number:
        lines += ["", f"Parent issue: #{fan_out.issue_number}."]
    lines += ["", f"<!-- codex:consolidation:{fan_out.parent.task_id} -->"]
    return "\n".join(lines)


def _listing(numbers: list[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers)
