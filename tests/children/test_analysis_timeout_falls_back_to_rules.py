"""Spec 001 "Analysis timeout: 8 minutes": an analysis that never finished is
decided by the rules (DESIGN: "a rule-based decision is the fallback")."""

from __future__ import annotations

from datetime import timedelta

import pytest

from codex.children.jobs import close_expired_windows
from codex.children.models import FanOut
from tests.children.factories import make_fan_out, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def stuck(monkeypatch):
    """A fan-out whose analysis started but whose analyst crashed mid-way."""
    fan_out = make_fan_out(2)
    post(fan_out, "🤖 Child C1 complete: PR #10")

    def crash(self, **kwargs):
        raise RuntimeError("worker died")

    with monkeypatch.context() as patch:
        patch.setattr(FanOut, "analyse", crash)
        with pytest.raises(RuntimeError):
            post(fan_out, "🤖 Child C2 complete: PR #11")
    fan_out.refresh_from_db()
    assert fan_out.state == "analyzing"
    return fan_out


def test_before_8_minutes_the_analysis_is_left_running(stuck):
    started = stuck.analysis_started_at
    assert stuck.close_window(started + timedelta(minutes=7, seconds=59)) is False
    stuck.refresh_from_db()
    assert stuck.state == "analyzing"


def test_after_8_minutes_the_rules_decide_even_if_a_model_is_offered(stuck):
    def model(reports):
        raise AssertionError("the model had its 8 minutes")

    now = stuck.analysis_started_at + timedelta(minutes=8)
    assert stuck.close_window(now, analyst=model)
    assert stuck.state == "complete"
    assert stuck.analysis.decided_by == "rule"
    assert stuck.analysis.merge_strategy == "MERGE_ALL"


def test_the_scheduled_job_finds_stuck_analyses(stuck):
    now = stuck.analysis_started_at + timedelta(minutes=8, seconds=1)
    assert close_expired_windows(now) == 1
    stuck.refresh_from_db()
    assert stuck.state == "complete"
