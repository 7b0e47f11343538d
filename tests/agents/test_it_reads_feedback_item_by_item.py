"""Feedback of either loop is read item by item, with ids the developer
answers by (agents.feedback)."""

from __future__ import annotations

from types import SimpleNamespace

from agents import feedback
from agents.roles.developer import TaskItem, progress_note
from agents.runtime import validate


def task_with(history):
    return SimpleNamespace(feedback_history=history)


QA_ENTRY = {
    "cycle": 1,
    "at": "2026-01-01T00:00:00",
    "feedback": {
        "summary": "1 test(s) failed",
        "items": ["Fix failing test test_mul: assert 5 == 6", "Make lint pass"],
        "test_output": "x" * 10_000 + "FAILED test_mul.py::test_mul",
    },
}
REVIEW_ENTRY = {
    "cycle": 1,
    "at": "2026-01-02T00:00:00",
    "feedback": {
        "message": "Two things.",
        "comments": [
            {"id": "R001", "severity": "suggestion", "issue": "Rename"},
            {
                "id": "R002",
                "severity": "blocking",
                "file": "a.py",
                "line": 3,
                "issue": "Bug",
                "suggestion": "Fix it",
            },
        ],
    },
}


def test_it_numbers_qa_findings_and_keeps_the_end_of_the_output():
    read = feedback.latest(task_with({"verification": [QA_ENTRY]}))
    assert read.owner == "QA" and read.ids == ["Q001", "Q002"]
    text = feedback.feedback_prompt(read)
    assert "Q001: Fix failing test test_mul: assert 5 == 6" in text
    assert "FAILED test_mul.py::test_mul" in text


def test_it_takes_the_newest_loop_and_lists_blocking_comments_first():
    read = feedback.latest(
        task_with({"verification": [QA_ENTRY], "review": [REVIEW_ENTRY]})
    )
    assert read.loop == "review" and read.ids == ["R002", "R001"]
    assert "R002 [blocking] a.py:3: Bug\n  Suggested fix: Fix it" in (
        feedback.feedback_prompt(read)
    )


def test_it_requires_an_answer_for_every_finding():
    schema = feedback.responses_schema(
        {"type": "object", "properties": {}, "required": []}, ["R001", "R002"]
    )
    one = [{"id": "R001", "status": "fixed", "note": "done"}]
    assert validate({"feedback_responses": one}, schema)
    assert validate({}, schema)
    both = [*one, {"id": "R002", "status": "not_fixed", "note": "wrong"}]
    assert validate({"feedback_responses": both}, schema) == []


def test_the_progress_note_points_a_feedback_cycle_at_the_feedback():
    items = [TaskItem("T001", "Add mul")]
    committed = {"T001": "a" * 40}
    assert progress_note(items, committed).endswith("Nothing is left.")
    note = progress_note(items, committed, feedback=True)
    assert "Nothing is left." not in note and "feedback" in note
