"""Spec 001 §3 "Validation Rules", applied to every analysis (rules or Claude):

- total_children == len(successful + failed + partial)
- prs_to_merge subset of PRs from successful children
- merge_strategy must align with child statuses
"""

from __future__ import annotations

import dataclasses

import pytest

from codex.children.decision import (
    AnalysisInvalid,
    Decision,
    candidate_from_model_response,
    decide,
    validate_analysis,
)
from codex.children.parsing import ChildReportData, parse_child_report
from tests.children.factories import SPEC_RESPONSE

SPEC_REPORTS = [
    parse_child_report("🤖 Child C1 complete: PR #10 ready for review"),
    parse_child_report("🤖 Child C2 failed: dependency conflicts"),
]


def violations(candidate, reports) -> list[str]:
    with pytest.raises(AnalysisInvalid) as caught:
        validate_analysis(candidate, reports)
    return caught.value.violations


def test_the_specs_claude_response_is_a_valid_model_decision():
    candidate = candidate_from_model_response(SPEC_RESPONSE, SPEC_REPORTS)
    validate_analysis(candidate, SPEC_REPORTS)
    assert candidate.decided_by == "model"
    assert (candidate.successful_children, candidate.failed_children) == (
        ("C1",),
        ("C2",),
    )
    assert candidate.total_children == 2
    assert candidate.summary == "1 of 2 children successful. Merging PR #10."


def test_merging_a_pr_of_a_failed_child_is_refused():
    reports = [
        *SPEC_REPORTS,
        ChildReportData("C3", "PARTIAL", 12),
    ]
    payload = {**SPEC_RESPONSE["analysis"], "prs_to_merge": [10, 12, 99]}
    found = violations(candidate_from_model_response(payload, reports), reports)
    assert found == [
        "prs_to_merge #12, #99 are not pull requests of successful children "
        "(allowed: #10)"
    ]


def test_total_must_be_successful_plus_failed_plus_partial():
    reports = [*SPEC_REPORTS, ChildReportData("C3", "AMBIGUOUS")]
    candidate = decide(reports)
    # Ambiguous children are listed apart and not counted in the total.
    assert (candidate.total_children, candidate.ambiguous_children) == (2, ("C3",))
    wrong = dataclasses.replace(candidate, total_children=3)
    assert violations(wrong, reports) == [
        "total_children is 3 but successful + failed + partial is 2"
    ]


def test_the_child_lists_must_match_the_reports():
    wrong = dataclasses.replace(
        decide(SPEC_REPORTS), successful_children=("C1", "C2"), failed_children=()
    )
    found = violations(wrong, SPEC_REPORTS)
    assert "successful_children is [C1, C2] but the SUCCESS reports are [C1]" in found
    assert "failed_children is [none] but the FAILURE reports are [C2]" in found
    assert "total_children is 2 but successful + failed + partial is 2" not in found


@pytest.mark.parametrize(
    ("strategy", "prs", "message"),
    [
        ("MERGE_ALL", [10], "MERGE_ALL needs every reporting child to have succeeded"),
        ("MERGE_PARTIAL", [], "MERGE_PARTIAL must merge at least one pull request"),
        ("NO_MERGE", [10], "NO_MERGE must not merge pull requests"),
        ("MANUAL_REVIEW", [10], "MANUAL_REVIEW must not merge pull requests"),
        ("MERGE_EVERYTHING", [], "unknown merge_strategy 'MERGE_EVERYTHING'"),
    ],
)
def test_the_strategy_must_align_with_the_statuses(strategy, prs, message):
    candidate = Decision.from_reports(
        SPEC_REPORTS,
        merge_strategy=strategy,
        prs_to_merge=prs,
        reasoning="because",
        decided_by="model",
    )
    assert any(v.startswith(message) for v in violations(candidate, SPEC_REPORTS))


def test_merge_all_must_merge_every_successful_pr_and_partial_needs_a_non_success():
    reports = [
        ChildReportData("C1", "SUCCESS", 10),
        ChildReportData("C2", "SUCCESS", 11),
    ]
    some = Decision.from_reports(
        reports,
        merge_strategy="MERGE_ALL",
        prs_to_merge=[10],
        reasoning="r",
        decided_by="model",
    )
    assert violations(some, reports) == [
        "MERGE_ALL must merge every successful child's PR (#10, #11), not #10"
    ]
    partial = dataclasses.replace(some, merge_strategy="MERGE_PARTIAL")
    assert violations(partial, reports) == [
        "MERGE_PARTIAL with every child successful is MERGE_ALL"
    ]


def test_every_violation_is_listed_in_one_error():
    candidate = Decision(
        merge_strategy="NO_MERGE",
        prs_to_merge=(10, 10),
        reasoning="  ",
        successful_children=(),
        failed_children=("C2",),
        partial_children=(),
        ambiguous_children=(),
        total_children=5,
        decided_by="oracle",
        final_pr_number=50,
    )
    with pytest.raises(AnalysisInvalid) as caught:
        validate_analysis(candidate, SPEC_REPORTS)
    found = caught.value.violations
    assert found == [
        "unknown decided_by 'oracle'",
        "successful_children is [none] but the SUCCESS reports are [C1]",
        "total_children is 5 but successful + failed + partial is 1",
        "prs_to_merge repeats a pull request: [10, 10]",
        "NO_MERGE must not merge pull requests",
        "reasoning is empty",
        "final_pr_number #50 given for NO_MERGE, which merges nothing",
    ]
    assert str(caught.value).startswith("invalid completion analysis: (1) unknown")
    assert "(7) final_pr_number #50" in str(caught.value)


def test_a_malformed_model_response_is_refused():
    with pytest.raises(AnalysisInvalid, match="prs_to_merge is not a list"):
        candidate_from_model_response({"prs_to_merge": "10"}, SPEC_REPORTS)
    with pytest.raises(AnalysisInvalid, match="not an object"):
        candidate_from_model_response({"analysis": ["MERGE_ALL"]}, SPEC_REPORTS)
    booleans = candidate_from_model_response(
        {**SPEC_RESPONSE["analysis"], "prs_to_merge": [True]}, SPEC_REPORTS
    )
    assert "prs_to_merge holds non-PR values: [True]" in violations(
        booleans, SPEC_REPORTS
    )
