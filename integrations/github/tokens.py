"""Where the GitHub client gets its token: a `TokenSource` the domain registers
when it is ready (`codex.github.apps`), so this package reads no codex model.

The source gives the token to use now and hears when GitHub refused it (a
401: the installation token was revoked, or the personal token must rotate).
This module imports no SDK, so registering the source costs nothing in a
process that never talks to GitHub.
"""

from __future__ import annotations

from typing import Protocol

from django.conf import settings

from codex.core.errors import NO_RESPONSE, Action, make_error

SOURCE = "github"


class TokenSource(Protocol):
    """What the client asks of whoever keeps Codex's GitHub token."""

    def token(self) -> str:
        """The token to call GitHub (and git on GitHub) with now."""
        ...

    def refused(self) -> None:
        """GitHub refused the token (401): the next `token()` must not be it."""
        ...


_source: TokenSource | None = None


def use_token_source(source: TokenSource) -> None:
    """Make `source` the one the client takes its token from."""
    global _source
    _source = source


def token_source() -> TokenSource:
    """The registered source; a manual_review ClassifiedFailure when none is
    (the github app is not installed)."""
    if _source is None:
        make_error(
            SOURCE,
            NO_RESPONSE,
            Action.MANUAL_REVIEW,
            "No GitHub token source: codex.github is not in INSTALLED_APPS",
        ).raise_()
    return _source


def token_refused() -> None:
    """Tell the registered source (if any) that GitHub refused its token."""
    if _source is not None:
        _source.refused()


def app_configured() -> bool:
    """Whether Codex authenticates as a GitHub App (all three settings set)."""
    return bool(
        settings.GITHUB_APP_ID
        and settings.GITHUB_APP_PRIVATE_KEY
        and settings.GITHUB_APP_INSTALLATION_ID
    )
