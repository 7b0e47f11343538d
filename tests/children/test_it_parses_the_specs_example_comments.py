"""Spec 001's own example comments, verbatim, read by parse_child_report."""

from __future__ import annotations

from codex.children.parsing import ChildReportData, parse_child_report

# Spec 001 "Issue Comment (from GitHub API)" and "Claude Analysis Request".
SPEC_SUCCESS = "🤖 Child C1 complete: PR #10 ready for review"
SPEC_FAILURE = "🤖 Child C2 failed: dependency conflicts"


def test_the_success_example_is_c1_success_with_pr_10():
    assert parse_child_report(SPEC_SUCCESS) == ChildReportData(
        child_id="C1", status_type="SUCCESS", pr_number=10, failure_reason=""
    )


def test_the_failure_example_is_c2_failure_because_of_dependency_conflicts():
    assert parse_child_report(SPEC_FAILURE) == ChildReportData(
        child_id="C2",
        status_type="FAILURE",
        pr_number=None,
        failure_reason="dependency conflicts",
    )


def test_partial_and_ambiguous_reports():
    partial = parse_child_report("🤖 Child C3 mostly done, PR #12 lacks tests")
    assert (partial.child_id, partial.status_type, partial.pr_number) == (
        "C3",
        "PARTIAL",
        12,
    )
    ambiguous = parse_child_report("🤖 Child C4 checking in")
    assert (ambiguous.child_id, ambiguous.status_type) == ("C4", "AMBIGUOUS")
    assert ambiguous.failure_reason == ""


def test_a_failure_reason_on_the_next_line_is_found():
    report = parse_child_report("🤖 Child C5 failed\n\n  npm install exited 1  \n")
    assert report.failure_reason == "npm install exited 1"


def test_a_failure_without_any_description_still_has_a_reason():
    # Spec 001 §2: "If status_type == FAILURE, failure_reason should be present".
    report = parse_child_report("🤖 Child C5 error")
    assert report.status_type == "FAILURE"
    assert report.failure_reason == "error"


def test_a_long_failure_reason_is_cut_to_500_characters():
    report = parse_child_report("🤖 Child C1 failed: " + "x" * 5000)
    assert len(report.failure_reason) == 500
    assert report.failure_reason.endswith("…")


def test_a_failure_calling_itself_critical_is_marked_critical():
    assert parse_child_report("🤖 Child C1 failed: CRITICAL data loss").critical
    assert not parse_child_report(SPEC_FAILURE).critical
    # Only failures can be critical failures.
    assert not parse_child_report("🤖 Child C1 mostly done (critical)").critical


def test_the_first_valid_pr_number_is_taken():
    assert (
        parse_child_report("🤖 Child C1 complete: PR #0, PR #7, PR #8").pr_number == 7
    )
