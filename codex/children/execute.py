"""Carrying out a fan-out's completion analysis (docs/children.md).

`carry_out(fan_out)` runs after the analysis is stored (enqueued when the
fan-out completes) and is safe to run any number of times:

1. with the consolidation option on (children.consolidation_pr) and two or
   more pull requests to merge, the consolidation pull request is opened and
   merged first (codex.children.consolidation); then the pull requests to
   merge are merged in the analysis's order, each at its
   head (perform_once, under the same key the child's own release would use,
   so a pull request is never merged twice); the first refusal stops the rest;
2. the analysis is posted on the parent's issue (once per distinct result);
3. the children: a merged child's next step completes it (its release finds
   the pull request merged); a child not chosen is cancelled, unless the
   analysis asks for MANUAL_REVIEW (a person decides about them);
4. the parent: completed when everything chosen merged (and its issue
   closed), escalated otherwise (NO_MERGE, MANUAL_REVIEW, a refused merge).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django.conf import settings
from django_fsm import TransitionNotAllowed

from codex.children.choices import FanOutState, MergeStrategy
from codex.children.consolidation import consolidate, consolidation_wanted
from codex.children.decision import MERGING_STRATEGIES
from codex.children.models import Child, CompletionAnalysis, FanOut
from codex.core.errors import ClassifiedFailure
from codex.core.store import (
    LeaseUnavailable,
    SideEffectUncertain,
    VersionConflict,
    perform_once,
    settle,
)
from codex.core.workers import enqueue_on_commit
from codex.repositories.forge import get_forge
from codex.repositories.models import MergeGate

logger = logging.getLogger(__name__)

BY = "system:fan-out"
ADVANCE_JOB = "codex.tasks.jobs.advance_task"


def carry_out(fan_out: FanOut) -> dict[str, Any]:
    """Do what the fan-out's analysis decided; returns what happened."""
    if fan_out.state != FanOutState.COMPLETE:
        return {"skipped": f"the fan-out is {fan_out.state}"}
    analysis = CompletionAnalysis.objects.get(fan_out=fan_out)
    parent = fan_out.parent
    forge = get_forge(parent.repository)
    consolidated, refused = None, ""
    if consolidation_wanted(analysis):
        consolidated, refused = consolidate(fan_out, analysis, forge)
    merged: list[int] = []
    if not refused:
        merged, refused = merge_in_order(fan_out, analysis, forge)
    outcome = {"merged": merged, "refused": refused, "consolidated": consolidated}
    post_analysis(fan_out, analysis, forge, merged, refused)
    outcome["children"] = settle_children(fan_out, analysis, merged, refused)
    outcome["parent"] = finish_parent(fan_out, analysis, forge, merged, refused)
    return outcome


def merge_in_order(
    fan_out: FanOut, analysis: CompletionAnalysis, forge: Any
) -> tuple[list[int], str]:
    """Merge analysis.prs_to_merge in order; (merged numbers, why it stopped)."""
    repository = fan_out.parent.repository
    method = getattr(settings, "CODEX_MERGE_METHOD", "squash")
    merged: list[int] = []
    for number in (
        analysis.prs_to_merge if analysis.merge_strategy in MERGING_STRATEGIES else []
    ):
        key = f"pr:merge:{repository.pk}:{number}:"
        try:
            pull = forge.get_pull_request(number)
            if pull["state"] == "merged":
                settle(key, {"merged": number, "url": pull["url"]}, prefix=True)
                merged.append(number)
                continue
            if pull["state"] != "open":
                return merged, f"pull request #{number} is {pull['state']}"
            if repository.merge_gate != MergeGate.AUTO:
                # The repository's merge gate holds for the children's pull
                # requests too: a person merges (or approves) them, never
                # Codex on its own (docs/children.md).
                order = ", ".join(f"#{n}" for n in analysis.prs_to_merge)
                return merged, (
                    f"the repository's merge gate is {repository.merge_gate}: "
                    f"a person merges the children's pull requests ({order}, in "
                    f"that order); pull request #{number} is still open"
                )
            if pull["draft"]:
                forge.mark_ready(number)
            sha = pull["head_sha"]
            perform_once(
                key + sha,
                lambda n=number, s=sha: dict(
                    forge.merge_pull_request(n, sha=s, method=method)
                ),
                lookup=lambda n=number: (
                    dict(found)
                    if (found := forge.get_pull_request(n))["state"] == "merged"
                    else None
                ),
                task=fan_out.parent,
                kind="pr",
            )
        except (ClassifiedFailure, SideEffectUncertain) as exc:
            return merged, f"pull request #{number} was not merged: {exc}"[:1000]
        merged.append(number)
    return merged, ""


def analysis_text(
    fan_out: FanOut, analysis: CompletionAnalysis, merged: list[int], refused: str
) -> str:
    """The comment the parent's issue gets: the decision and what came of it."""
    lines = [
        f"## Completion analysis: {analysis.merge_strategy}",
        "",
        analysis.summary or "",
        "",
        f"Decided by: {analysis.get_decided_by_display()} "
        f"({analysis.get_trigger_display().lower()}).",
        f"Children reporting: {analysis.reporting_count} of "
        f"{analysis.expected_child_count} expected"
        + (f" ({analysis.discrepancy})" if analysis.discrepancy else "")
        + ".",
        f"Successful: {', '.join(analysis.successful_children) or 'none'}; "
        f"failed: {', '.join(analysis.failed_children) or 'none'}; "
        f"partial: {', '.join(analysis.partial_children) or 'none'}; "
        f"ambiguous: {', '.join(analysis.ambiguous_children) or 'none'}.",
        consolidation_line(analysis),
        "Merged: " + (", ".join(f"#{n}" for n in merged) or "nothing") + ".",
    ]
    if refused:
        lines.append(f"Stopped: {refused}")
    lines += ["", "### Reasoning", "", analysis.reasoning]
    return "\n".join(lines).strip()


def consolidation_line(analysis: CompletionAnalysis) -> str:
    """What became of the children's pull requests: one consolidation pull
    request, or each merged in order (docs/children.md#consolidation)."""
    if analysis.merge_strategy not in MERGING_STRATEGIES:
        return "Consolidation: none (nothing to merge)."
    if analysis.final_pr_number:
        return (
            f"Consolidation: pull request #{analysis.final_pr_number} merges the "
            "children's branches ("
            + ", ".join(f"#{n}" for n in analysis.prs_to_merge)
            + ")."
        )
    return (
        "Consolidation: none; the children's pull requests merge one by one in "
        "this order (children.consolidation_pr is off, or one pull request)."
    )


def post_analysis(
    fan_out: FanOut,
    analysis: CompletionAnalysis,
    forge: Any,
    merged: list[int],
    refused: str,
) -> None:
    """The analysis on the parent's issue, once per distinct text."""
    issue = fan_out.issue_number
    if issue is None:
        return
    text = analysis_text(fan_out, analysis, merged, refused)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    marker = f"<!-- codex:fanout-analysis:{fan_out.parent.task_id}:{digest} -->"
    perform_once(
        f"fanout:analysis:{fan_out.parent.repository.pk}:{issue}:{digest}",
        lambda: dict(forge.comment(issue, f"{text}\n\n{marker}")),
        lookup=lambda: (
            None if (seen := forge.find_comment(issue, marker)) is None else dict(seen)
        ),
        task=fan_out.parent,
        kind="comment",
    )


def settle_children(
    fan_out: FanOut,
    analysis: CompletionAnalysis,
    merged: list[int],
    refused: str = "",
) -> dict[str, str]:
    """Merged children take their next step (their release completes them);
    children not chosen are cancelled, except under MANUAL_REVIEW. Children
    chosen but not merged because a merge was refused are left for the person
    the parent's escalation asks (their pull requests may still go in)."""
    from codex.children.reporting import pr_number

    done: dict[str, str] = {}
    for child in Child.objects.filter(fan_out=fan_out).select_related("task"):
        task = child.task
        if task.is_terminal:
            done[child.child_id] = task.status
            continue
        if pr_number(task.pr_url) in merged:
            enqueue_on_commit(ADVANCE_JOB, task.task_id)
            done[child.child_id] = "merged"
            continue
        chosen_but_stopped = refused and pr_number(task.pr_url) in (
            analysis.prs_to_merge
        )
        if analysis.merge_strategy == MergeStrategy.MANUAL_REVIEW or chosen_but_stopped:
            done[child.child_id] = "left for a person"
            continue
        try:
            task.request_control(
                "cancel",
                by=BY,
                reason=f"not merged: the parent's analysis chose "
                f"{analysis.merge_strategy}",
            )
            done[child.child_id] = "cancelled"
        except TransitionNotAllowed as exc:
            done[child.child_id] = str(exc)
    return done


def finish_parent(
    fan_out: FanOut,
    analysis: CompletionAnalysis,
    forge: Any,
    merged: list[int],
    refused: str,
) -> str:
    """Complete the parent when all chosen pull requests merged, else escalate
    it with the reason. A parent no longer in progress is left as it is."""
    parent = type(fan_out.parent).objects.get(pk=fan_out.parent_id)
    if parent.status != "in_progress":
        return parent.status
    chosen = list(analysis.prs_to_merge)
    try:
        if (
            analysis.merge_strategy in MERGING_STRATEGIES
            and not refused
            and merged == chosen
        ):
            parent.perform(
                "complete_children",
                by=BY,
                reason=f"{analysis.merge_strategy}: merged "
                + ", ".join(f"#{n}" for n in merged),
            )
            _close_parent_issue(fan_out, forge)
        else:
            why = refused or analysis.summary or analysis.merge_strategy
            parent.perform(
                "escalate",
                by=BY,
                reason=f"the children's work needs a person "
                f"({analysis.merge_strategy}): {why}"[:2000],
                code="manual_review",
            )
    except (LeaseUnavailable, VersionConflict, TransitionNotAllowed) as exc:
        logger.info("carry_out %s: parent busy (%s); next run", fan_out, exc)
        return f"not yet: {exc}"
    return parent.status


def _close_parent_issue(fan_out: FanOut, forge: Any) -> None:
    issue = fan_out.issue_number
    if issue is None:
        return
    try:
        perform_once(
            f"issue:close:{fan_out.parent.repository.pk}:{issue}",
            lambda: (forge.close_issue(issue), {"closed": issue})[1],
            lookup=lambda: None,
            task=fan_out.parent,
            kind="issue",
        )
    except (ClassifiedFailure, SideEffectUncertain) as exc:
        logger.info("the parent issue #%s stays open: %s", issue, exc)
