"""Productivity numbers: two distinct scores, health, warnings
(docs/domain/fleet.md#productivity).

There are two scores and this module keeps both, under their own names:

- SessionOutcome `productivity_score` = (issues_closed * 10 + files_changed)
  / tool_count, and 0 when tool_count = 0;
- ProductivityMetrics `score` = (files_changed * 2 + issues_closed * 5)
  / max(tool_count, 1).

Health status:
- "warning" if productivity_score < 0.1 and tool_count > 30 (SessionOutcome
  validation rule), or if any ProductivityMetrics warning applies
  (tool_count >= 30 with 0 files changed, or tool_count >= 30 with score < 0.1);
- "unhealthy" for a run that failed (crashed or was stopped), whose numbers
  say nothing;
- "healthy" otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from codex.fleet.models.choices import HealthStatus

# SessionOutcome: health_status = "warning" if productivity_score < 0.1 and
# tool_count > 30.
OUTCOME_SCORE_THRESHOLD = 0.1
OUTCOME_TOOL_COUNT_ABOVE = 30
# ProductivityMetrics warning thresholds: tool_count >= 30; score < 0.1.
WARNING_TOOL_COUNT_AT_LEAST = 30
SCORE_THRESHOLD = 0.1


def productivity_score(
    *, issues_closed: int, files_changed: int, tool_count: int
) -> float:
    """SessionOutcome's ratio (issues_closed * 10 + files_changed) / tool_count;
    0 when there were no tool calls."""
    if tool_count == 0:
        return 0.0
    return (issues_closed * 10 + files_changed) / tool_count


@dataclass(frozen=True)
class ProductivityMetrics:
    """The counts a session's health is judged by
    (docs/domain/fleet.md#productivity)."""

    tool_count: int
    files_changed: int
    issues_closed: int
    response_length: int | None = None

    @property
    def score(self) -> float:
        """(files_changed * 2 + issues_closed * 5) / max(tool_count, 1)."""
        return (self.files_changed * 2 + self.issues_closed * 5) / max(
            self.tool_count, 1
        )

    @property
    def productivity_score(self) -> float:
        """SessionOutcome's score of the same counts (see productivity_score)."""
        return productivity_score(
            issues_closed=self.issues_closed,
            files_changed=self.files_changed,
            tool_count=self.tool_count,
        )

    @property
    def warnings(self) -> list[str]:
        """The warning texts, word for word as session logs carry them; X is the
        score to 3 places."""
        found = []
        if self.tool_count >= WARNING_TOOL_COUNT_AT_LEAST and self.files_changed == 0:
            found.append(
                f"Low productivity: {self.tool_count} tool calls but 0 files changed"
            )
        if (
            self.tool_count >= WARNING_TOOL_COUNT_AT_LEAST
            and self.score < SCORE_THRESHOLD
        ):
            found.append(
                f"Productivity score {self.score:.3f} below threshold {SCORE_THRESHOLD}"
            )
        return found

    @property
    def outcome_warning(self) -> bool:
        """SessionOutcome's rule: productivity_score < 0.1 and tool_count > 30."""
        return (
            self.productivity_score < OUTCOME_SCORE_THRESHOLD
            and self.tool_count > OUTCOME_TOOL_COUNT_ABOVE
        )

    def health_status(self, *, failed: bool = False) -> str:
        """healthy, warning or unhealthy (a failed run), as the module says."""
        if failed:
            return HealthStatus.UNHEALTHY
        if self.outcome_warning or self.warnings:
            return HealthStatus.WARNING
        return HealthStatus.HEALTHY
