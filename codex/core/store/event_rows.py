"""The event row a logged state change writes with it.

codex.core writes a change and its events in one statement or transaction
(codex.core.store.logged_state, codex.core.store.statements) but does not know the event
model: the app that owns the event log registers how to make an unsaved event
row when it starts (codex.events: EventsConfig.ready). A system check refuses
to start without one (codex.core.store.django_internals).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import models

# Takes the event's fields (kind, subject, actor, reason, task_id, field,
# source, target, data) and returns an unsaved row.
EventRowFactory = Callable[..., models.Model]

_factory: EventRowFactory | None = None


def register_event_row_factory(factory: EventRowFactory) -> None:
    """Make `factory(**fields)` the maker of every logged change's event row."""
    global _factory
    _factory = factory


def event_row_factory_registered() -> bool:
    """Whether an event log registered its row factory."""
    return _factory is not None


def event_row(**fields: Any) -> models.Model:
    """An unsaved event row with `fields`, to be written with the change."""
    if _factory is None:
        raise ImproperlyConfigured(
            "no event log registered: codex.events registers it on start"
        )
    return _factory(**fields)
