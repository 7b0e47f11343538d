"""Bodies a hostile or broken commenter could post: huge, odd numbers, unicode."""

from __future__ import annotations

import time

import pytest

from codex.children.parsing import parse_child_report


def test_a_github_maximum_size_comment_parses_within_100ms():
    # Spec 001 "Comment parsing: < 100ms"; GitHub caps a comment at 65,536 chars.
    body = "🤖 Child C1 complete: " + "a " * 32_700 + "PR #10"
    assert len(body) <= 65_536
    started = time.perf_counter()
    report = parse_child_report(body)
    assert time.perf_counter() - started < 0.1
    assert (report.status_type, report.pr_number) == ("SUCCESS", 10)


def test_a_megabytes_body_of_near_matches_does_not_backtrack():
    body = "🤖 Child C2 " + "🤖 Chil PR # error" * 200_000 + " failed: disk full"
    started = time.perf_counter()
    report = parse_child_report(body)
    assert time.perf_counter() - started < 2
    assert report.child_id == "C2"
    assert report.status_type == "FAILURE"


def test_an_absurd_pr_number_is_not_a_pr_number():
    digits = "9" * 10_000  # int() of this would raise ValueError in Python 3.11
    report = parse_child_report(f"🤖 Child C1 complete: PR #{digits}")
    assert report.status_type == "SUCCESS"
    assert report.pr_number is None
    assert parse_child_report("🤖 Child C1 complete: PR #2147483648").pr_number is None
    assert parse_child_report("🤖 Child C1 complete: PR #2147483647").pr_number == (
        2_147_483_647
    )


def test_unicode_around_the_marker_is_kept_in_the_reason():
    report = parse_child_report("🤖 Child C7 failed: Ümlaut-Pfad nicht gefunden 🚫")
    assert report.child_id == "C7"
    assert report.failure_reason == "Ümlaut-Pfad nicht gefunden 🚫"


def test_control_characters_and_nul_bytes_do_not_confuse_the_parser():
    report = parse_child_report("\x00🤖 Child C1\x00 complete\r\nPR #5\x1b[31m")
    assert (report.child_id, report.status_type, report.pr_number) == (
        "C1",
        "SUCCESS",
        5,
    )


def test_a_double_encoded_marker_is_not_a_marker():
    # The spec file itself shows the marker double-encoded ("ðŸ¤– Child");
    # GitHub delivers UTF-8, so that text is not a child report.
    assert parse_child_report("ðŸ¤– Child C1 complete: PR #10") is None


@pytest.mark.django_db
def test_a_nul_byte_in_a_stored_comment_is_replaced_not_fatal():
    # PostgreSQL text cannot hold NUL: the body is stored with U+FFFD instead.
    from tests.children.factories import make_fan_out, post

    report = post(make_fan_out(2), "🤖 Child C1\x00 complete: PR #5")
    report.refresh_from_db()
    assert report.body == "🤖 Child C1\ufffd complete: PR #5"
    assert report.pr_number == 5
