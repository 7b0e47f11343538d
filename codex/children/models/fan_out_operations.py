"""What happens to a fan-out, each in one transaction with its row locked:
a transition and what follows it, a child's report arriving, the window
closing, the completion analysis (docs/domain/fan-out.md); mixed into
FanOut."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string
from django_fsm import TransitionNotAllowed

from codex.children.choices import FanOutState, WorkflowEvent
from codex.children.decision import Decision, decide, validate_analysis
from codex.children.models.analysis import CompletionAnalysis, discrepancy_of
from codex.children.models.fan_out_queryset import analysis_timeout
from codex.children.models.report import ChildReport
from codex.children.parsing import parse_child_report

if TYPE_CHECKING:
    from codex.children.models.fan_out import FanOut

Analyst = Callable[[Sequence[ChildReport]], Decision]
# The factory of the default analyst (Claude, one model call): fan_out → Analyst.
DEFAULT_ANALYST = "agents.fanout.claude_analyst"
ANALYSIS_TIMED_OUT = "the analysis ran past its time: the rules decide"


def default_analyst(fan_out: FanOut) -> Analyst:
    """The analyst CODEX_CHILDREN_ANALYST names (a factory taking the fan-out),
    Claude's by default. Raises what the factory raises (no key configured)."""
    factory = import_string(
        getattr(settings, "CODEX_CHILDREN_ANALYST", None) or DEFAULT_ANALYST
    )
    return factory(fan_out)


class FanOutOperations:
    """The operations of a fan-out (one transaction each, the row locked)."""

    def _locked(self) -> FanOut:
        return type(self).objects.select_for_update().get(pk=self.pk)

    def _run(self, action: str, *, by: str, **arguments: Any) -> None:
        """Run transition `action` on this locked row under the lease, and save."""
        method = getattr(self, action, None)
        if method is None or not hasattr(method, "_django_fsm"):
            raise TransitionNotAllowed(f"{action!r} is not a transition of a fan-out")
        if not arguments.get("reason"):
            arguments.pop("reason", None)
        self.acquire_lease(by, attempts=1)
        method(by=by, **arguments)
        self.save(release_lease=True)

    def perform(
        self,
        action: str,
        *,
        by: str,
        reason: str = "",
        analyst: Analyst | None = None,
        **arguments: Any,
    ) -> FanOut:
        """Run transition `action` (spawn_children, open_window, trigger_manually)
        and what follows from it: opening the window checks the count (children
        may have reported already), and a started analysis is run.

        Raises TransitionNotAllowed, LeaseUnavailable or VersionConflict.
        """
        with transaction.atomic():
            fan_out = self._locked()
            fan_out._run(action, by=by, reason=reason, **arguments)
            if action == "open_window":
                fan_out._check_count(by=by)
        self.refresh_from_db()
        if self.state == FanOutState.ANALYZING:
            self.analyse(by=by, analyst=analyst)
        return self

    def receive_comment(
        self,
        *,
        comment_id: int,
        body: str,
        by: str,
        author: str = "",
        reported_at: datetime | None = None,
        child_task=None,
        analyst: Analyst | None = None,
    ) -> ChildReport | None:
        """Record a comment on the parent issue as a child report, and start the
        analysis when it completes the expected count.

        Returns None for a comment without the "🤖 Child" marker (ignored,
        docs/domain/fan-out.md#child-reports); the stored report when the
        comment was already
        received (redelivery changes nothing). Otherwise logs COMMENT_RECEIVED
        and COUNT_CHECK, and when awaiting completions with every expected child
        reported, ANALYSIS_TRIGGERED, the analysis and ANALYSIS_COMPLETE.
        """
        if isinstance(body, str):
            # PostgreSQL text cannot hold NUL; GitHub never sends one anyway.
            body = body.replace("\x00", "\ufffd")
        data = parse_child_report(body)
        if data is None:
            return None
        reported_at = reported_at or timezone.now()
        with transaction.atomic():
            fan_out = self._locked()
            report, created = ChildReport.objects.record(
                fan_out,
                data,
                comment_id=comment_id,
                body=body,
                author=author,
                reported_at=reported_at,
                child_task=child_task,
            )
            if created:
                fan_out._log_comment(report, by=by)
                fan_out._check_count(by=by)
        self.refresh_from_db()
        if created and self.state == FanOutState.ANALYZING:
            self.analyse(by=by, analyst=analyst)
        return report

    def _log_comment(self, report: ChildReport, *, by: str) -> None:
        superseded = getattr(report, "superseded", None)
        self.log_workflow(
            WorkflowEvent.COMMENT_RECEIVED,
            by=by,
            reason=f"{report.child_id} reported {report.status_type}",
            child_id=report.child_id,
            comment_id=report.comment_id,
            author=report.author,
            status_type=report.status_type,
            pr_number=report.pr_number,
            current=report.is_current,
            supersedes=superseded.comment_id if superseded else None,
            late=self.state in (FanOutState.ANALYZING, FanOutState.COMPLETE),
        )

    def _check_count(self, *, by: str) -> bool:
        """Log COUNT_CHECK; start the analysis when awaiting and the count is met.
        Returns whether it started."""
        actual = self.reporting_count()
        expected = self.expected_child_count
        met = actual >= expected
        discrepancy = discrepancy_of(expected, actual) if met else ""
        self.log_workflow(
            WorkflowEvent.COUNT_CHECK,
            by=by,
            reason=f"{actual} of {expected} expected children reported",
            expected_count=expected,
            actual_count=actual,
            threshold_met=met,
            discrepancy=discrepancy,
            state=self.state,
        )
        if met and self.state == FanOutState.AWAITING_COMPLETIONS:
            reason = "all expected children reported"
            if discrepancy:
                reason += f" ({actual} reported, {expected} expected: overflow)"
            self._run("trigger_on_count", by=by, reason=reason)
            return True
        return False

    def close_window(
        self,
        now: datetime | None = None,
        *,
        by: str = "scheduler:close_window",
        analyst: Analyst | None = None,
    ) -> bool:
        """The timeout path. A completion window past its deadline starts the
        analysis of whatever arrived (an underflow); an analysis
        running past `analysis_timeout()` is finished by the rules. Returns whether
        it did anything (False before the deadline, or in any other state).
        """
        now = now or timezone.now()
        rules_because = ""
        with transaction.atomic():
            fan_out = self._locked()
            if (
                fan_out.state == FanOutState.AWAITING_COMPLETIONS
                and fan_out.deadline is not None
                and fan_out.deadline <= now
            ):
                actual, expected = (
                    fan_out.reporting_count(),
                    fan_out.expected_child_count,
                )
                reason = f"completion window closed: {actual} of {expected} reported"
                fan_out._run("time_out", by=by, reason=reason)
            elif not (
                fan_out.state == FanOutState.ANALYZING
                and fan_out.analysis_started_at is not None
                and fan_out.analysis_started_at + analysis_timeout() <= now
            ):
                return False
            else:
                rules_because = ANALYSIS_TIMED_OUT  # the model had its time
        self.refresh_from_db()
        self.analyse(by=by, analyst=analyst, rules_because=rules_because)
        return True

    def analyse(
        self,
        *,
        by: str,
        analyst: Analyst | None = None,
        rules_because: str = "",
    ) -> CompletionAnalysis:
        """Decide the merge strategy from the current reports, validate it, store
        it (idempotently) and complete.

        The analyst (`analyst`, else `default_analyst`: Claude, one model call)
        proposes a Decision, checked by `validate_analysis`; when it cannot be
        had (no model configured), fails, or its answer breaks a rule, the rules
        of `decide` decide, and ANALYSIS_COMPLETE's `fallback` says why, as does
        `rules_because` when the caller wants the rules only. The model call's
        tokens and cost, when the analyst reports them, go on the same event.
        Runs outside a transaction so a slow analyst holds no lock; the result
        is stored only if still analysing.
        """
        if self.state != FanOutState.ANALYZING:
            raise TransitionNotAllowed(
                f"{self} is {self.state}: trigger the analysis first"
            )
        reports = list(self.reports.current().order_by("child_id"))
        decision, fallback, owned = None, rules_because, False
        if analyst is None and not rules_because:
            try:
                analyst, owned = default_analyst(self), True
            except Exception as exc:  # not configured: the rules decide
                fallback = f"no model analysis: {type(exc).__name__}: {exc}"
        if analyst is not None and not rules_because:
            try:
                decision = analyst(reports)
                validate_analysis(decision, reports)
            except Exception as exc:  # any analyst failure falls back to the rules
                decision, fallback = None, f"{type(exc).__name__}: {exc}"
            finally:
                if owned and hasattr(analyst, "close"):
                    analyst.close()
        usage = _usage_of(analyst) if not rules_because else {}
        if decision is None:
            decision = decide(reports)
            validate_analysis(decision, reports)
        with transaction.atomic():
            fan_out = self._locked()
            if fan_out.state != FanOutState.ANALYZING:
                # Another worker finished first: theirs stands.
                self.refresh_from_db()
                return CompletionAnalysis.objects.get(fan_out=fan_out)
            analysis, changed = CompletionAnalysis.objects.store(
                fan_out, decision, reports, trigger=fan_out.analysis_trigger
            )
            fan_out.log_workflow(
                WorkflowEvent.ANALYSIS_COMPLETE,
                by=by,
                reason=decision.summary or decision.merge_strategy,
                merge_strategy=analysis.merge_strategy,
                prs_to_merge=analysis.prs_to_merge,
                decided_by=analysis.decided_by,
                total_children=analysis.total_children,
                successful=analysis.successful_count,
                failed=analysis.failed_count,
                partial=analysis.partial_count,
                ambiguous=analysis.ambiguous_count,
                discrepancy=analysis.discrepancy,
                changed=changed,
                fallback=fallback[:2000],
                **usage,
            )
            fan_out._run("complete", by=by)
        self.refresh_from_db()
        return analysis


def _usage_of(analyst: Any) -> dict[str, Any]:
    """The model call's usage and cost, if the analyst kept them (ClaudeAnalyst)."""
    usage = getattr(analyst, "usage", None)
    if usage is None or not hasattr(usage, "as_dict"):
        return {}
    return {
        "model": str(getattr(analyst, "model", "")),
        **usage.as_dict(),
        "cost_usd": str(getattr(analyst, "cost_usd", "")),
    }
