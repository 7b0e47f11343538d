"""What the GitHub sync (codex.github.sync) does with the pull requests it
saw, registered from the apps' ready() (the fleet moves its agent instances
waiting on theirs), so that the GitHub cache imports no app above it
(docs/architecture.md#layer-debts). Apart from the sync so that registering
never imports PyGithub in processes that only need the local forge.
"""

from __future__ import annotations

from collections.abc import Callable

_PULL_REQUEST_HANDLERS: list[Callable[..., dict[str, list[int]]]] = []


def on_pull_requests(
    handler: Callable[..., dict[str, list[int]]],
) -> Callable[..., dict[str, list[int]]]:
    """Register `handler(repository, pulls, *, ask_each, client)`: what a
    sync does with the pull requests it saw (`pulls`, GitHub's items by
    number; `ask_each` when the window may not reach back to their last
    change), answering what it moved, by outcome ("merged", "closed")."""
    if handler not in _PULL_REQUEST_HANDLERS:
        _PULL_REQUEST_HANDLERS.append(handler)
    return handler


def pull_request_handlers() -> list[Callable[..., dict[str, list[int]]]]:
    """The registered handlers, in the order they were registered."""
    return list(_PULL_REQUEST_HANDLERS)
