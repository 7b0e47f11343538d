"""Spec 001 "Invalid Markers: Comment missing '🤖 Child' marker → Ignore comment",
and `child_id` must match `C\\d+`."""

from __future__ import annotations

import pytest

from codex.children.parsing import parse_child_report


@pytest.mark.parametrize(
    "body",
    [
        "Child C1 complete: PR #10 ready for review",  # no robot
        "🤖 child C1 complete: PR #10",  # the marker is case-sensitive
        "🤖Child C1 complete: PR #10",  # no space inside the marker
        "🤖 Children C1 complete: PR #10",  # no child id after the marker
        "🤖 Child complete: PR #10",  # no child id
        "🤖 Child X1 complete: PR #10",  # not C\d+
        "🤖 Child C complete: PR #10",  # no digits
        "🤖 Child C1x complete: PR #10",  # id runs on into other characters
        "🤖 Child C١ complete: PR #10",  # Arabic-Indic digit, not ASCII
        "🤖 Child C１ complete: PR #10",  # full-width digit
        "🤖 Child C" + "1" * 25 + " complete",  # longer than a stored child id
        "",
        "LGTM, thanks!",
    ],
)
def test_a_comment_without_a_valid_marker_and_id_is_ignored(body):
    assert parse_child_report(body) is None


def test_non_text_is_ignored():
    assert parse_child_report(None) is None  # type: ignore[arg-type]


def test_two_markers_naming_different_children_are_ignored():
    # Attributing it to either child could overwrite that child's real report.
    body = "🤖 Child C1 complete: PR #10\n🤖 Child C2 failed: conflicts"
    assert parse_child_report(body) is None


def test_two_markers_naming_the_same_child_are_one_report():
    body = "🤖 Child C1 complete: PR #10\n\n(🤖 Child C1 summary above)"
    assert parse_child_report(body).child_id == "C1"


def test_the_marker_may_appear_anywhere_in_the_comment():
    body = "Status update\n\n> 🤖 Child C3 complete: PR #31"
    report = parse_child_report(body)
    assert (report.child_id, report.status_type, report.pr_number) == (
        "C3",
        "SUCCESS",
        31,
    )
