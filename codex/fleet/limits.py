"""The configured review-loop limits (docs/domain/fleet.md#review-loop).

They are configuration keys (docs/domain/configuration.md#configuration-keys):
`review.max_iterations` ('3'), `review.auto_abandon_after` ('5') and
`review.timeout_hours` ('24'); they are
read with `get_config` (database, then environment, then default) each time a
limit is applied, so a value saved in the console takes effect at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from codex.configuration.config import get_config

# The CHECK on instance relationships: review_iteration > 0 AND <= 5
# (docs/domain/fleet.md#review-loop).
REVIEW_ITERATION_CAP = 5


@dataclass(frozen=True)
class ReviewLimits:
    """How many review loops a coding agent gets, and when to give up."""

    max_iterations: int
    auto_abandon_after: int
    timeout_hours: int


def review_limits() -> ReviewLimits:
    """The limits now in force; max_iterations never exceeds the database's cap."""
    return ReviewLimits(
        max_iterations=min(get_config("review.max_iterations"), REVIEW_ITERATION_CAP),
        auto_abandon_after=get_config("review.auto_abandon_after"),
        timeout_hours=get_config("review.timeout_hours"),
    )
