"""The console lists a gate's escalation with every other one, and says
where it is answered (docs/gates.md): the inbox."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import make_task, waiting_for_plan_approval

pytestmark = pytest.mark.django_db


def test_a_plan_approval_is_listed_with_its_answer_link(console):
    task = waiting_for_plan_approval(make_task())
    escalation = task.escalations.open().get()
    html = console.get(reverse("admin:tasks_escalation_changelist")).content.decode()
    assert "Plan approval" in html
    assert f"/inbox/#escalation-{escalation.pk}" in html
