"""The configured review-loop limits of spec 004 ("Configuration Management").

Spec 004 keeps them in `user_config` as `review.max_iterations` ('3'),
`review.auto_abandon_after` ('5') and `review.timeout_hours` ('24'). Codex's
database-held configuration (codex/configuration) is being built separately;
until it exists these are read from settings with the spec's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

# The CHECK of spec 004's instance_relationships: review_iteration > 0 AND <= 5.
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
        max_iterations=min(
            int(getattr(settings, "CODEX_REVIEW_MAX_ITERATIONS", 3)),
            REVIEW_ITERATION_CAP,
        ),
        auto_abandon_after=int(getattr(settings, "CODEX_REVIEW_AUTO_ABANDON_AFTER", 5)),
        timeout_hours=int(getattr(settings, "CODEX_REVIEW_TIMEOUT_HOURS", 24)),
    )
