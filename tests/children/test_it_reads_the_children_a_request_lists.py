"""A request that lists its children (docs/children.md, "Listing children"):
spec 001 "expected_child_count: Integer - Extracted from issue body" and
"expected_child_count >= 0 and <= 5 (max parallel children)"."""

from __future__ import annotations

import pytest

from codex.children.requests import ChildListInvalid, from_split, parse_children_list

BODY = """As a user I want two functions.

## Children
- [ ] C1: Add sub(a, b)
  sub.py and its test.
- [x] C2: Add mul(a, b)

Thanks!
"""


def test_it_reads_each_child_with_its_description():
    children = parse_children_list(BODY)
    assert [(c.child_id, c.title) for c in children] == [
        ("C1", "Add sub(a, b)"),
        ("C2", "Add mul(a, b)"),
    ]
    assert children[0].description == "sub.py and its test."
    assert children[1].description == ""


def test_a_body_without_children_is_not_a_fan_out():
    assert parse_children_list("Fix C1 handling: see the log") == []
    assert parse_children_list("") == []


def test_only_a_children_section_lists_children():
    # A request that mentions "C1: ..." outside the section is not a fan-out.
    stray = "Steps to reproduce:\nC1: open the page\nC2: press save\n"
    assert parse_children_list(stray) == []
    assert parse_children_list("- [ ] C1: a\n- [ ] C2: b") == []
    # The section ends at the next heading: lines after it are not children.
    body = "### children\n- C1: a\n\n## Notes\nC2: not a child\n"
    assert [c.child_id for c in parse_children_list(body)] == ["C1"]


def test_more_than_five_children_or_a_repeated_id_is_refused():
    six = "## Children\n" + "\n".join(f"- C{n}: part {n}" for n in range(1, 7))
    with pytest.raises(ChildListInvalid, match="at most 5"):
        parse_children_list(six)
    with pytest.raises(ChildListInvalid, match="twice"):
        parse_children_list("## Children\n- C1: a\n- C1: b")


def test_the_planners_split_is_numbered_and_bounded():
    children = from_split([{"title": "a"}, {"title": "b", "description": "x"}])
    assert [c.child_id for c in children] == ["C1", "C2"]
    with pytest.raises(ChildListInvalid):
        from_split([])
    with pytest.raises(ChildListInvalid):
        from_split([{"title": str(n)} for n in range(6)])
