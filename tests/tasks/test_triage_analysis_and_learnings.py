"""Spec 003 triage, analysis, build results and learnings attached to tasks."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from codex.tasks.models import Analysis, BuildResult, Learning, Triage
from codex.tasks.models.analysis import OUTPUT_EXCERPT_LIMIT
from tests.factories import make_repository, make_task

pytestmark = pytest.mark.django_db


def test_a_rejection_needs_a_reason():
    """`triage.should_proceed = false` stops the pipeline: it must say why."""
    with pytest.raises(IntegrityError), transaction.atomic():
        Triage.objects.create(
            task=make_task(),
            type="NEW_FEATURE",
            scope="LARGE",
            complexity="complex",
            should_proceed=False,
        )


def test_one_triage_per_task():
    task = make_task()
    Triage.objects.create(task=task, type="BUG_FIX", scope="SMALL", complexity="simple")
    with pytest.raises(IntegrityError), transaction.atomic():
        Triage.objects.create(
            task=task, type="BUG_FIX", scope="SMALL", complexity="simple"
        )


def valid_analysis(**fields) -> Analysis:
    values = {
        "files": [{"path": "a.py", "purpose": "x", "action": "modify"}],
        "patterns": ["uses hooks"],
        "test_requirement": {"required": True, "type": "regression"},
        "must_do": ["fix it"],
        "must_not_do": ["don't refactor"],
        "brief": "# Brief",
    }
    values.update(fields)
    return Analysis(task=make_task(), **values)


def test_a_valid_analysis_passes_clean():
    valid_analysis().clean()


@pytest.mark.parametrize(
    "fields",
    [
        {"files": [{"path": "a.py", "action": "rename"}]},
        {"files": [{"action": "modify"}]},
        {"files": "a.py"},
        {"must_not_do": "don't"},
        {"patterns": [1, 2]},
        {"test_requirement": {}},
        {"brief": "  "},
    ],
    ids=[
        "bad action",
        "no path",
        "not a list",
        "rules not a list",
        "not strings",
        "no required flag",
        "blank brief",
    ],
)
def test_an_analysis_with_the_wrong_shape_is_refused(fields):
    with pytest.raises(ValidationError):
        valid_analysis(**fields).clean()


def test_build_output_is_excerpted_from_the_end():
    output = "x" * (OUTPUT_EXCERPT_LIMIT * 2) + "FAILED: test_login"
    entry = BuildResult.command("npm test", 1, output)
    assert entry["exit_code"] == 1
    assert entry["output"].endswith("FAILED: test_login")
    assert len(entry["output"]) == OUTPUT_EXCERPT_LIMIT + 1


def test_build_passed_needs_tests_lint_and_type_check():
    result = BuildResult(tests_passed=True, lint_passed=True, type_check_passed=False)
    assert not result.passed
    result.type_check_passed = True
    assert result.passed


def test_learnings_for_the_prompt_are_the_repositorys_newest():
    repository = make_repository()
    other = make_repository()
    for number in range(25):
        Learning.objects.create(
            repository=repository, agent="writer", type="t", content=f"n{number}"
        )
    Learning.objects.create(repository=other, agent="writer", type="t", content="x")
    learnings = list(Learning.objects.for_prompt(repository, limit=20))
    assert len(learnings) == 20
    assert learnings[0].content == "n24"
    assert all(item.repository_id == repository.pk for item in learnings)
