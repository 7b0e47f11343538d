"""Spec 003 inter-agent questions: from, to, question, answer, answered."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from codex.tasks.models import AgentQuestion, AlreadyAnswered
from tests.factories import make_task

pytestmark = pytest.mark.django_db


def ask(task, **fields) -> AgentQuestion:
    defaults = {"from_role": "writer", "to_role": "analyst", "question": "Where?"}
    return AgentQuestion.objects.create(task=task, **{**defaults, **fields})


def test_a_question_is_answered_once():
    question = ask(make_task())
    assert not question.answered
    question.record_answer("In hooks/useApi.ts", by="agent:analyst")
    question.refresh_from_db()
    assert question.answered
    assert question.answer == "In hooks/useApi.ts"
    with pytest.raises(AlreadyAnswered):
        question.record_answer("Somewhere else", by="agent:analyst")
    question.refresh_from_db()
    assert question.answer == "In hooks/useApi.ts"


def test_a_stale_copy_cannot_overwrite_the_answer():
    question = ask(make_task())
    stale = AgentQuestion.objects.get(pk=question.pk)
    question.record_answer("first", by="a")
    with pytest.raises(AlreadyAnswered):
        stale.record_answer("second", by="b")
    assert AgentQuestion.objects.get(pk=question.pk).answer == "first"


def test_an_empty_answer_is_refused():
    question = ask(make_task())
    with pytest.raises(ValidationError):
        question.record_answer("   ", by="a")
    assert not AgentQuestion.objects.get(pk=question.pk).answered


def test_a_role_cannot_ask_itself():
    with pytest.raises(IntegrityError), transaction.atomic():
        ask(make_task(), from_role="writer", to_role="writer")


def test_unanswered_lists_only_open_questions():
    task = make_task()
    open_question = ask(task)
    answered = ask(task, question="Why?")
    answered.record_answer("Because", by="a")
    assert list(task.questions.unanswered()) == [open_question]
