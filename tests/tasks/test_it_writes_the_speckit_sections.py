"""Spec 002 §4.1-4.3: spec.md ("# Feature: {title}", "## User Stories",
"## Functional Requirements", "## Success Criteria", "## Edge Cases"), plan.md
("# Implementation Plan: {title}", "## Technical Context", "## Implementation
Approach", "## Component Design") and tasks.md ("# Tasks: {title}", "## Task
List", "### Task 1: {title}" with Files, Tests, Dependencies, Acceptance)."""

from __future__ import annotations

import re

from agents.roles.developer import task_items
from codex.tasks.speckit import complete_plan, complete_spec, tasks_md

SPEC_HEADINGS = [
    "# Feature: Add user authentication",
    "## User Stories",
    "## Functional Requirements",
    "## Success Criteria",
    "## Edge Cases",
]


def headings(text: str) -> list[str]:
    return re.findall(r"^#{1,3} .*$", text, re.MULTILINE)


def test_a_spec_in_the_specs_form_is_kept_as_written():
    written = (
        "# Feature: Add user authentication\n\n## User Stories\n- As a user, I want"
        " to log in, so that I see my dashboard\n\n## Functional Requirements\n1."
        " FR1: login endpoint\n\n## Success Criteria\n- [ ] SC1: valid login works"
        "\n\n## Edge Cases\n- EC1: a wrong password returns 401\n"
    )

    spec = complete_spec(written, title="Add user authentication")

    assert headings(spec) == SPEC_HEADINGS
    assert [line for line in spec.splitlines() if line] == [
        line for line in written.splitlines() if line
    ]


def test_missing_sections_are_added_and_criteria_come_from_the_request():
    written = (
        "# Auth\n\nSome overview.\n\n## Acceptance Criteria\n\n## Out of Scope\nSSO"
    )

    spec = complete_spec(
        written,
        title="Add user authentication",
        acceptance_criteria="- Users can register\n- Users can log in\n",
    )

    assert headings(spec) == [*SPEC_HEADINGS, "## Out of Scope"]
    assert "Some overview." in spec
    assert "- [ ] SC1: Users can register\n- [ ] SC2: Users can log in" in spec
    assert "## Edge Cases\n\n_Not stated._" in spec


def test_a_plan_gets_the_specs_sections_from_its_own_headings():
    plan = complete_plan(
        "# Implementation Plan\n\n## Approach\nAdd mul.\n\n## Risks\nNone.",
        title="Add mul",
    )

    assert headings(plan) == [
        "# Implementation Plan: Add mul",
        "## Technical Context",
        "## Implementation Approach",
        "## Component Design",
        "## Risks",
    ]
    assert "## Implementation Approach\n\nAdd mul." in plan


def test_tasks_are_listed_with_their_fields_and_the_developers_items():
    text = tasks_md(
        "Add mul and sub",
        [
            {"title": "Add mul", "files": ["calc.py"], "tests": "test_mul.py"},
            {"title": "Add sub", "description": "Subtract.", "acceptance": "sub(3, 1)"},
        ],
    )

    assert headings(text) == [
        "# Tasks: Add mul and sub",
        "## Task List",
        "### Task 1: Add mul",
        "### Task 2: Add sub",
    ]
    assert "- **Files**: calc.py\n- **Tests**: test_mul.py\n" in text
    assert "- **Dependencies**: none" in text
    assert "- **Dependencies**: Task 1\n- **Acceptance**: sub(3, 1)" in text
    assert [item.id for item in task_items(text)] == ["T001", "T002"]
