"""Creating and finding fan-outs, within docs/domain/fan-out.md#fan-out-limits."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db import models, transaction

from codex.children.choices import FanOutState
from codex.core.store import VersionedQuerySet, hot_row
from codex.events.models import EventKind

if TYPE_CHECKING:
    from codex.children.models.fan_out import FanOut

# The limits of docs/domain/fan-out.md#fan-out-limits: at most 5 children (the
# bound of docs/domain/fleet.md#parallel-limit), a completion
# window of 10 minutes, and 8 minutes for the model's analysis before the rules
# decide.
MAX_CHILDREN = 5
DEFAULT_WINDOW = timedelta(minutes=10)
# The defaults of configuration children.window_minutes and
# children.analysis_timeout_minutes, read by the functions below.
ANALYSIS_TIMEOUT = timedelta(minutes=8)


def analysis_timeout() -> timedelta:
    """How long the model's analysis may run before the rules decide
    (configuration children.analysis_timeout_minutes, 8 by default)."""
    from codex.configuration.config import get_config

    return timedelta(minutes=get_config("children.analysis_timeout_minutes"))


def completion_window() -> timedelta:
    """How long a new fan-out waits for its children (configuration
    children.window_minutes, 10 by default)."""
    from codex.configuration.config import get_config

    return timedelta(minutes=get_config("children.window_minutes"))


class FanOutQuerySet(VersionedQuerySet):
    protected_update_fields = frozenset({"state"})

    @hot_row
    def of_parent(self, parent_id: int) -> FanOutQuerySet:
        """The fan-out a task is the parent of, or None (every step of every
        task asks; parent is one-to-one)."""
        return self.filter(parent_id=parent_id).order_by()[:1]

    def start(
        self,
        parent,
        *,
        expected_child_count: int,
        by: str,
        issue_number: int | None = None,
        window: timedelta = DEFAULT_WINDOW,
    ) -> FanOut:
        """Create the fan-out of `parent` (state created), validated and logged."""
        fan_out = self.model(
            parent=parent,
            expected_child_count=expected_child_count,
            issue_number=issue_number,
            window=window,
        )
        # state is a protected FSMField: full_clean would try to re-assign it.
        fan_out.full_clean(exclude=["state"])
        with transaction.atomic():
            fan_out.save()
            fan_out.log(
                EventKind.CREATED,
                by=by,
                reason=f"fan-out to {expected_child_count} child agent(s)",
                target=fan_out.state,
                data={"expected_child_count": expected_child_count},
            )
        return fan_out

    def due(self, now: datetime) -> FanOutQuerySet:
        """Fan-outs `close_window(now)` would act on: an expired completion
        window, or an analysis running longer than `analysis_timeout()`."""
        return self.filter(
            models.Q(state=FanOutState.AWAITING_COMPLETIONS, deadline__lte=now)
            | models.Q(
                state=FanOutState.ANALYZING,
                analysis_started_at__lte=now - analysis_timeout(),
            )
        )
