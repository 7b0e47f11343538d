"""The completion analysis (docs/domain/fan-out.md#merge-decision): the rule-based
merge decision and the validation every analysis passes, whoever made it (these
rules or Claude).

Pure functions over reports: anything with `child_id`, `status_type`,
`pr_number` and `critical` (a ChildReportData or a stored ChildReport), one per
child (the latest: only it counts, docs/domain/fan-out.md#child-reports).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from codex.children.choices import DecidedBy, MergeStrategy, StatusType

MERGING_STRATEGIES = frozenset({MergeStrategy.MERGE_ALL, MergeStrategy.MERGE_PARTIAL})
CRITICAL_KEYWORD = "critical"


class Report(Protocol):
    """What the decision reads from a child's report."""

    child_id: str
    status_type: str
    pr_number: int | None
    critical: bool


class AnalysisInvalid(ValueError):
    """An analysis broke the rules of docs/domain/fan-out.md#analysis-validation;
    lists every violation."""

    def __init__(self, violations: Sequence[str]) -> None:
        self.violations = list(violations)
        super().__init__(
            "invalid completion analysis: "
            + "; ".join(f"({n}) {v}" for n, v in enumerate(self.violations, 1))
        )


@dataclass(frozen=True)
class Decision:
    """One completion analysis result (docs/domain/fan-out.md#merge-decision).

    `total_children` is len(successful + failed + partial), as the validation says:
    AMBIGUOUS children are listed apart and are not in the total.
    """

    merge_strategy: str
    prs_to_merge: tuple[int, ...]
    reasoning: str
    successful_children: tuple[str, ...]
    failed_children: tuple[str, ...]
    partial_children: tuple[str, ...]
    ambiguous_children: tuple[str, ...]
    total_children: int
    decided_by: str = DecidedBy.RULE
    summary: str = ""
    final_pr_number: int | None = None

    @classmethod
    def from_reports(
        cls,
        reports: Iterable[Report],
        *,
        merge_strategy: str,
        prs_to_merge: Iterable[int],
        reasoning: str,
        decided_by: str,
        summary: str = "",
        final_pr_number: int | None = None,
    ) -> Decision:
        """A decision whose child lists and total are derived from `reports`."""
        groups = partition(reports)
        return cls(
            merge_strategy=merge_strategy,
            prs_to_merge=tuple(prs_to_merge),
            reasoning=reasoning,
            successful_children=groups[StatusType.SUCCESS],
            failed_children=groups[StatusType.FAILURE],
            partial_children=groups[StatusType.PARTIAL],
            ambiguous_children=groups[StatusType.AMBIGUOUS],
            total_children=sum(
                len(groups[s])
                for s in (StatusType.SUCCESS, StatusType.FAILURE, StatusType.PARTIAL)
            ),
            decided_by=decided_by,
            summary=summary,
            final_pr_number=final_pr_number,
        )


def child_sort_key(child_id: str) -> tuple[int, str]:
    """C2 before C10."""
    digits = child_id[1:]
    return (int(digits) if digits.isdigit() else 0, child_id)


def partition(reports: Iterable[Report]) -> dict[str, tuple[str, ...]]:
    """Child ids by status type, each group in child order."""
    groups: dict[str, list[str]] = {status: [] for status in StatusType.values}
    for report in reports:
        groups.setdefault(report.status_type, []).append(report.child_id)
    return {
        status: tuple(sorted(ids, key=child_sort_key)) for status, ids in groups.items()
    }


def is_critical_failure(report: Report) -> bool:
    """A FAILURE the child itself called critical.

    The merge rules speak of "no critical failure" without defining one; they can
    only go by what the child wrote, so a failure is critical when its comment
    says "critical".
    """
    return report.status_type == StatusType.FAILURE and bool(report.critical)


def successful_prs(reports: Iterable[Report]) -> tuple[int, ...]:
    """The pull requests of the successful children: all that may be merged."""
    return tuple(
        sorted(
            {
                r.pr_number
                for r in reports
                if r.status_type == StatusType.SUCCESS and r.pr_number
            }
        )
    )


def _one_per_child(reports: Iterable[Report]) -> list[Report]:
    reports = list(reports)
    ids = [r.child_id for r in reports]
    duplicates = sorted({i for i in ids if ids.count(i) > 1}, key=child_sort_key)
    if duplicates:
        raise ValueError(
            f"more than one report for {', '.join(duplicates)}: pass the latest only"
        )
    return sorted(reports, key=lambda r: child_sort_key(r.child_id))


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(ids) if ids else "none"


def _prs(prs: Sequence[int]) -> str:
    return ", ".join(f"#{n}" for n in prs)


def decide(reports: Iterable[Report]) -> Decision:
    """The rules of docs/domain/fan-out.md#merge-decision, in their order:

    1. all children successful → MERGE_ALL;
    2. > 50% successful and no critical failures → MERGE_PARTIAL;
    3. any ambiguous status → MANUAL_REVIEW;
    4. else NO_MERGE.

    Percentages are of the children that reported (an underflow analyses what
    arrived); no reports at all is NO_MERGE. A merging
    strategy whose successful children gave no pull request number becomes
    MANUAL_REVIEW, since there is nothing the rules could merge.
    """
    reports = _one_per_child(reports)
    groups = partition(reports)
    successful = groups[StatusType.SUCCESS]
    ambiguous = groups[StatusType.AMBIGUOUS]
    critical = [r.child_id for r in reports if is_critical_failure(r)]
    total = len(reports)
    prs = successful_prs(reports)
    counts = (
        f"{len(successful)} of {total} reporting children succeeded "
        f"({_ids(successful)}); failed: {_ids(groups[StatusType.FAILURE])}; "
        f"partial: {_ids(groups[StatusType.PARTIAL])}; "
        f"ambiguous: {_ids(ambiguous)}."
    )
    with_pr = {r.child_id for r in reports if r.pr_number}
    without_pr = [i for i in successful if i not in with_pr]

    if total and len(successful) == total:
        strategy, rule = MergeStrategy.MERGE_ALL, "All children succeeded"
    elif total and len(successful) * 2 > total and not critical:
        strategy = MergeStrategy.MERGE_PARTIAL
        rule = "More than 50% succeeded and no failure is critical"
    elif ambiguous:
        strategy = MergeStrategy.MANUAL_REVIEW
        rule = "A child's status is ambiguous"
        if len(successful) * 2 > total:
            rule += f" and {_ids(critical)} reported a critical failure"
    else:
        strategy, rule = (
            MergeStrategy.NO_MERGE,
            (
                "No child reported"
                if not total
                else "Not more than 50% succeeded"
                if len(successful) * 2 <= total
                else f"{_ids(critical)} reported a critical failure"
            ),
        )

    if strategy in MERGING_STRATEGIES and not prs:
        strategy = MergeStrategy.MANUAL_REVIEW
        rule += ", but no successful child gave a pull request number"
    merging = prs if strategy in MERGING_STRATEGIES else ()
    action = f"merge {_prs(merging)}" if merging else "merge nothing"
    reasoning = f"{rule}: {strategy}. {counts}"
    if without_pr and strategy in MERGING_STRATEGIES:
        reasoning += f" No pull request number from {_ids(without_pr)}."
    return Decision.from_reports(
        reports,
        merge_strategy=strategy,
        prs_to_merge=merging,
        reasoning=reasoning,
        decided_by=DecidedBy.RULE,
        summary=f"{len(successful)} of {total} children successful; {action}.",
    )


def _is_pr_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def validate_analysis(candidate: Decision, reports: Iterable[Report]) -> None:
    """Check `candidate` against the reports it analysed; raise AnalysisInvalid
    listing every violation. The rules (docs/domain/fan-out.md#analysis-validation):

    - total_children == len(successful + failed + partial);
    - prs_to_merge ⊆ the PRs of the successful children;
    - merge_strategy aligns with the child statuses: MERGE_ALL only when every
      reporting child succeeded and then merges all their PRs; MERGE_PARTIAL
      needs a successful child, a child that did not succeed, and a PR to merge;
      NO_MERGE and MANUAL_REVIEW merge nothing.

    Also: the child lists match the reports' statuses exactly, the reasoning is
    given, and a consolidation PR exists only for a merging strategy.
    """
    reports = list(reports)
    violations: list[str] = []
    ids = [r.child_id for r in reports]
    duplicates = sorted({i for i in ids if ids.count(i) > 1}, key=child_sort_key)
    if duplicates:
        violations.append(f"more than one report for {', '.join(duplicates)}")
    if candidate.merge_strategy not in MergeStrategy.values:
        violations.append(f"unknown merge_strategy {candidate.merge_strategy!r}")
    if candidate.decided_by not in DecidedBy.values:
        violations.append(f"unknown decided_by {candidate.decided_by!r}")

    groups = partition(reports)
    lists = {
        "successful_children": (candidate.successful_children, StatusType.SUCCESS),
        "failed_children": (candidate.failed_children, StatusType.FAILURE),
        "partial_children": (candidate.partial_children, StatusType.PARTIAL),
        "ambiguous_children": (candidate.ambiguous_children, StatusType.AMBIGUOUS),
    }
    for name, (listed, status) in lists.items():
        if sorted(listed, key=child_sort_key) != list(groups[status]):
            violations.append(
                f"{name} is [{_ids(listed)}] but the {status} reports are "
                f"[{_ids(groups[status])}]"
            )
    counted = (
        len(candidate.successful_children)
        + len(candidate.failed_children)
        + len(candidate.partial_children)
    )
    if candidate.total_children != counted:
        violations.append(
            f"total_children is {candidate.total_children} but successful + failed "
            f"+ partial is {counted}"
        )

    prs = list(candidate.prs_to_merge)
    allowed = set(successful_prs(reports))
    if any(not _is_pr_number(n) for n in prs):
        violations.append(f"prs_to_merge holds non-PR values: {prs!r}")
    elif len(set(prs)) != len(prs):
        violations.append(f"prs_to_merge repeats a pull request: {prs!r}")
    else:
        foreign = sorted(set(prs) - allowed)
        if foreign:
            violations.append(
                f"prs_to_merge {_prs(foreign)} are not pull requests of successful "
                f"children (allowed: {_prs(sorted(allowed)) or 'none'})"
            )

    violations.extend(_strategy_violations(candidate, reports, groups, allowed))
    if not str(candidate.reasoning or "").strip():
        violations.append("reasoning is empty")
    final = candidate.final_pr_number
    if final is not None:
        if not _is_pr_number(final):
            violations.append(f"final_pr_number {final!r} is not a PR number")
        elif candidate.merge_strategy not in MERGING_STRATEGIES:
            violations.append(
                f"final_pr_number #{final} given for {candidate.merge_strategy}, "
                "which merges nothing"
            )
    if violations:
        raise AnalysisInvalid(violations)


def _strategy_violations(
    candidate: Decision,
    reports: Sequence[Report],
    groups: Mapping[str, tuple[str, ...]],
    allowed: set[int],
) -> list[str]:
    strategy = candidate.merge_strategy
    successful = groups[StatusType.SUCCESS]
    prs = (
        set(candidate.prs_to_merge)
        if all(_is_pr_number(n) for n in candidate.prs_to_merge)
        else set()
    )
    if strategy == MergeStrategy.MERGE_ALL:
        problems = []
        if not reports or len(successful) != len(reports):
            problems.append(
                "MERGE_ALL needs every reporting child to have succeeded "
                f"({len(successful)} of {len(reports)} did)"
            )
        elif prs != allowed or not prs:
            problems.append(
                f"MERGE_ALL must merge every successful child's PR "
                f"({_prs(sorted(allowed)) or 'none'}), not "
                f"{_prs(sorted(prs)) or 'none'}"
            )
        return problems
    if strategy == MergeStrategy.MERGE_PARTIAL:
        problems = []
        if not successful:
            problems.append("MERGE_PARTIAL needs at least one successful child")
        elif len(successful) == len(reports):
            problems.append("MERGE_PARTIAL with every child successful is MERGE_ALL")
        if not candidate.prs_to_merge:
            problems.append("MERGE_PARTIAL must merge at least one pull request")
        return problems
    if strategy not in MERGING_STRATEGIES and candidate.prs_to_merge:
        return [f"{strategy} must not merge pull requests"]
    return []


def candidate_from_model_response(
    payload: Mapping[str, Any], reports: Iterable[Report]
) -> Decision:
    """Turn Claude's answer (docs/children.md: merge_strategy,
    prs_to_merge, reasoning, summary; optionally under "analysis") into a
    candidate Decision; the child lists come from the reports, not the model.
    Raises AnalysisInvalid when the payload's shape is wrong; call
    `validate_analysis` on the result before using it.
    """
    reports = list(reports)
    body = payload.get("analysis", payload) if isinstance(payload, Mapping) else None
    if not isinstance(body, Mapping):
        raise AnalysisInvalid(["the response is not an object with an analysis"])
    prs = body.get("prs_to_merge", [])
    if not isinstance(prs, list | tuple):
        raise AnalysisInvalid([f"prs_to_merge is not a list: {prs!r}"])
    final = body.get("final_pr_number")
    return Decision.from_reports(
        reports,
        merge_strategy=str(body.get("merge_strategy", "")),
        prs_to_merge=prs,
        reasoning=str(body.get("reasoning") or ""),
        decided_by=DecidedBy.MODEL,
        summary=str(body.get("summary") or ""),
        final_pr_number=final,
    )
