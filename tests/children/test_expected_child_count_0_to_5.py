"""Spec 001 §1: "expected_child_count >= 0 and <= 5 (max parallel children)";
"issue_number > 0"."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from codex.children.models import FanOut
from tests.children.factories import make_fan_out
from tests.factories import make_task

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("expected", [0, 1, 5])
def test_zero_to_five_children_are_accepted(expected):
    fan_out = FanOut.objects.start(make_task(), expected_child_count=expected, by="t")
    assert fan_out.expected_child_count == expected
    assert fan_out.state == "created"


@pytest.mark.parametrize("expected", [-1, 6])
def test_outside_zero_to_five_is_refused_by_validation(expected):
    with pytest.raises(ValidationError) as caught:
        FanOut.objects.start(make_task(), expected_child_count=expected, by="t")
    assert "expected_child_count" in caught.value.message_dict
    assert not FanOut.objects.exists()


def test_six_children_are_refused_by_the_database():
    fan_out = make_fan_out(5, open_window=False)
    with pytest.raises(IntegrityError), transaction.atomic():
        FanOut.objects.filter(pk=fan_out.pk).update(expected_child_count=6)


def test_issue_number_must_be_positive():
    with pytest.raises(ValidationError) as caught:
        FanOut.objects.start(
            make_task(), expected_child_count=2, issue_number=0, by="t"
        )
    assert "issue_number" in caught.value.message_dict
    fan_out = make_fan_out(2, open_window=False, issue_number=42)
    with pytest.raises(IntegrityError), transaction.atomic():
        FanOut.objects.filter(pk=fan_out.pk).update(issue_number=0)


def test_one_fan_out_per_parent_task():
    fan_out = make_fan_out(2, open_window=False)
    with pytest.raises(ValidationError):
        FanOut.objects.start(fan_out.parent, expected_child_count=1, by="t")
