"""Codex's GitHub token, given to the GitHub client (integrations.github) as
its TokenSource (docs/domain/configuration.md#forge-cache).

As a GitHub App (GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and
GITHUB_APP_INSTALLATION_ID set), the installation token is cached encrypted in
GitHubToken for its hour and refreshed under the row's lease, so many workers
make one exchange; otherwise the personal token is the credential in use
(`current_credential("github")`: GITHUB_TOKEN, rotated by the workers on a
401).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.utils import timezone

from codex.configuration.credentials import current_credential
from codex.core.errors import NO_RESPONSE, Action, make_error
from codex.core.store import LeaseUnavailable
from codex.github.models import GitHubToken
from integrations.github.tokens import SOURCE, app_configured


def installation_token_name() -> str:
    """The GitHubToken cache row of the configured installation."""
    return f"installation:{settings.GITHUB_APP_INSTALLATION_ID}"


def installation_token() -> str:
    """The installation token, from the cache while more than 5 minutes remain,
    else a new one fetched by one worker under the cache row's lease."""
    # The client (and so PyGithub) is loaded only when a token is fetched.
    from integrations.github.client import fetch_installation_token

    return GitHubToken.get_or_refresh(
        fetch_installation_token, name=installation_token_name()
    )


def forget_installation_token() -> bool:
    """Treat the cached installation token as expired (GitHub refused it: it
    was revoked, or the installation changed), so the next call exchanges a new
    one. False when there is none, or someone holds the lease: then a refresh
    is under way already. Never waits for the lease."""
    row = GitHubToken.objects.filter(name=installation_token_name()).first()
    if row is None or not row.token_encrypted:
        return False
    holder = f"token-forget:{uuid.uuid4().hex[:12]}"
    try:
        row.acquire_lease(holder, attempts=1)
    except LeaseUnavailable:
        return False
    try:
        row.expires_at = timezone.now()
        row.save(release_lease=True)
    finally:
        if row.held_lease == holder:
            row.release_lease()
    return True


def github_token() -> str:
    """The token Codex talks to GitHub (and git to github.com) with now.

    Raises ClassifiedFailure(manual_review) when nothing is configured: a
    person has to set GITHUB_TOKEN or the GitHub App settings.
    """
    if app_configured():
        return installation_token()
    token = current_credential(SOURCE)
    if not token:
        make_error(
            SOURCE,
            NO_RESPONSE,
            Action.MANUAL_REVIEW,
            "No GitHub credentials: set GITHUB_TOKEN or the GITHUB_APP_* settings",
        ).raise_()
    return token


class CodexTokens:
    """The TokenSource the github app registers with the client."""

    def token(self) -> str:
        """The token to use now (github_token)."""
        return github_token()

    def refused(self) -> None:
        """GitHub refused the token: as an App, "another token" is a new
        installation token; a personal token is rotated by the workers."""
        if app_configured():
            forget_installation_token()
