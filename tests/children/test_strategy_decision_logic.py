"""Spec 001 §3 "Strategy Decision Logic" as the rule-based `decide(reports)`:

IF all children successful: MERGE_ALL
ELIF > 50% successful AND no critical failures: MERGE_PARTIAL
ELIF any ambiguous status: MANUAL_REVIEW
ELSE: NO_MERGE
"""

from __future__ import annotations

import itertools

import pytest

from codex.children.decision import decide, validate_analysis
from codex.children.parsing import ChildReportData, parse_child_report


def report(child: str, status: str, pr: int | None = None, critical: bool = False):
    return ChildReportData(child, status, pr, "", critical)


def test_all_children_successful_merges_all_their_prs():
    decision = decide(
        [
            report("C1", "SUCCESS", 10),
            report("C2", "SUCCESS", 11),
            report("C3", "SUCCESS", 12),
        ]
    )
    assert decision.merge_strategy == "MERGE_ALL"
    assert decision.prs_to_merge == (10, 11, 12)
    assert decision.decided_by == "rule"
    assert (decision.total_children, decision.successful_children) == (
        3,
        ("C1", "C2", "C3"),
    )


def test_more_than_half_successful_without_critical_failures_merges_partially():
    decision = decide(
        [
            report("C1", "SUCCESS", 10),
            report("C2", "SUCCESS", 11),
            report("C3", "FAILURE"),
        ]
    )
    assert decision.merge_strategy == "MERGE_PARTIAL"
    assert decision.prs_to_merge == (10, 11)
    assert decision.failed_children == ("C3",)


def test_exactly_half_successful_is_not_more_than_50_percent():
    # The spec's own pair: C1 complete with PR #10, C2 failed.
    spec_reports = [
        parse_child_report("🤖 Child C1 complete: PR #10 ready for review"),
        parse_child_report("🤖 Child C2 failed: dependency conflicts"),
    ]
    assert decide(spec_reports).merge_strategy == "NO_MERGE"
    assert decide(spec_reports).prs_to_merge == ()


def test_a_critical_failure_blocks_the_partial_merge():
    reports = [
        report("C1", "SUCCESS", 10),
        report("C2", "SUCCESS", 11),
        report("C3", "FAILURE", critical=True),
    ]
    decision = decide(reports)
    assert decision.merge_strategy == "NO_MERGE"
    assert "C3" in decision.reasoning


def test_a_critical_failure_with_an_ambiguous_child_goes_to_manual_review():
    reports = [
        report("C1", "SUCCESS", 10),
        report("C2", "SUCCESS", 11),
        report("C3", "SUCCESS", 12),
        report("C4", "FAILURE", critical=True),
        report("C5", "AMBIGUOUS"),
    ]
    assert decide(reports).merge_strategy == "MANUAL_REVIEW"


def test_an_ambiguous_status_without_a_majority_goes_to_manual_review():
    reports = [report("C1", "SUCCESS", 10), report("C2", "AMBIGUOUS")]
    decision = decide(reports)
    assert decision.merge_strategy == "MANUAL_REVIEW"
    assert decision.prs_to_merge == ()
    assert decision.ambiguous_children == ("C2",)


def test_the_majority_rule_comes_before_the_ambiguous_rule():
    reports = [
        report("C1", "SUCCESS", 10),
        report("C2", "SUCCESS", 11),
        report("C3", "AMBIGUOUS"),
    ]
    assert decide(reports).merge_strategy == "MERGE_PARTIAL"


def test_partial_children_are_never_merged():
    reports = [
        report("C1", "SUCCESS", 10),
        report("C2", "SUCCESS", 11),
        report("C3", "PARTIAL", 12),
    ]
    decision = decide(reports)
    assert decision.merge_strategy == "MERGE_PARTIAL"
    assert 12 not in decision.prs_to_merge


def test_no_reports_merge_nothing():
    decision = decide([])
    assert decision.merge_strategy == "NO_MERGE"
    assert decision.total_children == 0
    assert "No child reported" in decision.reasoning


def test_successful_children_without_a_pr_number_go_to_manual_review():
    decision = decide([report("C1", "SUCCESS"), report("C2", "SUCCESS")])
    assert decision.merge_strategy == "MANUAL_REVIEW"
    assert decision.prs_to_merge == ()


def test_children_are_ordered_by_number_and_the_result_is_deterministic():
    reports = [report("C10", "SUCCESS", 2), report("C2", "SUCCESS", 1)]
    assert decide(reports).successful_children == ("C2", "C10")
    assert decide(reports) == decide(list(reversed(reports)))


def test_two_reports_of_one_child_are_refused():
    with pytest.raises(ValueError, match="C1"):
        decide([report("C1", "SUCCESS", 1), report("C1", "FAILURE")])


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_every_rule_based_decision_passes_validation(size):
    # Every combination of statuses for up to 5 children (spec: at most 5).
    kinds = [
        ("SUCCESS", 1, False),
        ("SUCCESS", None, False),
        ("FAILURE", None, False),
        ("FAILURE", None, True),
        ("PARTIAL", 1, False),
        ("AMBIGUOUS", None, False),
    ]
    for combo in itertools.product(kinds, repeat=size):
        reports = [
            report(f"C{n}", status, (100 + n) if pr else None, critical)
            for n, (status, pr, critical) in enumerate(combo, 1)
        ]
        validate_analysis(decide(reports), reports)
