"""Spec 001 §2 "Status Detection Logic", rule by rule and in the spec's order."""

from __future__ import annotations

import pytest

from codex.children.parsing import detect_status_type, parse_child_report


@pytest.mark.parametrize(
    ("body", "status"),
    [
        # 1. "complete" (any case) and "PR #" → SUCCESS
        ("🤖 Child C1 COMPLETE: PR #10", "SUCCESS"),
        # ...even when it also mentions an error: the first rule wins.
        ("🤖 Child C1 complete: PR #10 fixes the error page", "SUCCESS"),
        # "PR #" is case-sensitive in the spec: "pr #10" is no pull request.
        ("🤖 Child C1 complete: pr #10", "AMBIGUOUS"),
        # "complete" without "PR #" falls through to the later rules.
        ("🤖 Child C1 complete with errors", "FAILURE"),
        ("🤖 Child C1 complete", "AMBIGUOUS"),
        # Substrings count, as in the spec: "incomplete" contains "complete".
        ("🤖 Child C1 incomplete: PR #3", "SUCCESS"),
        # 2. "failed" or "error" → FAILURE
        ("🤖 Child C2 Failed: dependency conflicts", "FAILURE"),
        ("🤖 Child C2 hit an ERROR", "FAILURE"),
        # ...and before the partial keywords.
        ("🤖 Child C2 mostly failed", "FAILURE"),
        # 3. "partial" or "mostly" → PARTIAL
        ("🤖 Child C3 Partially done", "PARTIAL"),
        ("🤖 Child C3 mostly there", "PARTIAL"),
        # 4. anything else → AMBIGUOUS
        ("🤖 Child C4 done", "AMBIGUOUS"),
        ("🤖 Child C4", "AMBIGUOUS"),
    ],
)
def test_status_rules_apply_in_the_specs_order(body, status):
    assert detect_status_type(body) == status
    assert parse_child_report(body).status_type == status


def test_the_status_is_a_plain_string():
    assert type(detect_status_type("🤖 Child C1 failed")) is str
