"""The Attention block of the operator console's index: what needs an
operator now.

The apps add to it with `@attention_provider`: a function returning
AttentionItems, asked on every visit of the console's index (the tasks app's
are in codex.tasks.attention: held and stuck tasks, failing notifications,
configuration that weakens safety). A provider that fails becomes an item
saying so; it never breaks the index.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

logger = logging.getLogger(__name__)

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class AttentionItem:
    """One line of the Attention block: what, how serious, where to look."""

    message: str
    level: str = WARNING
    url: str = ""


Provider = Callable[[], Iterable[AttentionItem]]
_providers: list[Provider] = []


def attention_provider(provider: Provider) -> Provider:
    """Register `provider` (usable as a decorator); registering twice is once."""
    if provider not in _providers:
        _providers.append(provider)
    return provider


def attention_items() -> list[AttentionItem]:
    """Every provider's items, errors first."""
    items: list[AttentionItem] = []
    for provider in list(_providers):
        try:
            items.extend(provider())
        except Exception:
            logger.exception("attention provider %s failed", provider.__name__)
            items.append(
                AttentionItem(
                    f"Could not check {provider.__name__.replace('_', ' ')} "
                    "(the log has the error).",
                    ERROR,
                )
            )
    return sorted(items, key=lambda item: item.level != ERROR)
