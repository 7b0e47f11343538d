"""The guards of a fan-out's transitions, as named predicates."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codex.children.models.fan_out import FanOut


def all_expected_children_reported(fan_out: FanOut) -> bool:
    """Every expected child reported → trigger; more than expected (overflow)
    also proceeds (docs/domain/fan-out.md#fan-out-limits)."""
    return fan_out.reporting_count() >= fan_out.expected_child_count


def window_has_deadline(fan_out: FanOut) -> bool:
    """Only an open window can time out (close_window compares the clock)."""
    return fan_out.deadline is not None


def analysis_recorded(fan_out: FanOut) -> bool:
    """analyzing → complete only once the analysis is stored."""
    from codex.children.models.analysis import CompletionAnalysis

    return CompletionAnalysis.objects.filter(fan_out=fan_out).exists()
