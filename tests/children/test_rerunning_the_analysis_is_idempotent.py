"""Spec 001 "Idempotent Operations: Re-running analysis produces same result":
same reports → the same stored analysis, never a second row."""

from __future__ import annotations

import pytest
from django_fsm import TransitionNotAllowed

from codex.children.models import CompletionAnalysis
from codex.events.models import Event
from tests.children.factories import make_fan_out, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def analysed():
    fan_out = make_fan_out(3)
    post(fan_out, "🤖 Child C1 complete: PR #10 ready for review")
    post(fan_out, "🤖 Child C2 failed: dependency conflicts")
    post(fan_out, "🤖 Child C3 complete: PR #12")
    fan_out.refresh_from_db()
    return fan_out


def stored(analysis: CompletionAnalysis) -> dict:
    return {
        f.name: getattr(analysis, f.name)
        for f in CompletionAnalysis._meta.fields
        if f.name not in ("trigger",)
    }


def test_a_manual_rerun_over_the_same_reports_changes_nothing(analysed):
    before = stored(analysed.analysis)
    analysed.perform("trigger_manually", by="user:alice")
    assert analysed.state == "complete"
    assert CompletionAnalysis.objects.count() == 1
    after = CompletionAnalysis.objects.get()
    assert stored(after) == before  # analysed_at included: not rewritten
    complete = Event.objects.filter(
        task=analysed.parent, data__event="ANALYSIS_COMPLETE"
    ).in_order()
    assert [e.data["changed"] for e in complete] == [True, False]


def test_a_rerun_with_a_changed_report_updates_the_one_row(analysed):
    post(analysed, "🤖 Child C2 complete: PR #11", minutes=5)
    analysed.refresh_from_db()
    analysed.perform("trigger_manually", by="user:alice")
    assert CompletionAnalysis.objects.count() == 1
    analysis = CompletionAnalysis.objects.get()
    assert analysis.merge_strategy == "MERGE_ALL"
    assert analysis.prs_to_merge == [10, 11, 12]


def test_a_recorded_consolidation_pr_survives_a_rerun(analysed):
    CompletionAnalysis.objects.filter(fan_out=analysed).update(final_pr_number=99)
    analysed.perform("trigger_manually", by="user:alice")
    assert CompletionAnalysis.objects.get().final_pr_number == 99


def test_analyse_outside_analyzing_is_refused(analysed):
    with pytest.raises(TransitionNotAllowed, match="trigger the analysis first"):
        analysed.analyse(by="t")
