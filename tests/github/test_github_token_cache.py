"""Spec 002: "GitHub Token Cache | agent-state | YAML | 1 hour" and "Refresh GitHub
token | agent-state | Yes (60s)" - the token is reused while more than 5 minutes
remain and refreshed by one caller under the lease."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from codex.core.store.refusals import LeaseRequired
from codex.github.models import GitHubToken
from tests.configuration.factories import KEY_A

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def clock(settings):
    settings.CODEX_FERNET_KEYS = KEY_A
    with time_machine.travel(T0, tick=False) as traveller:
        yield traveller


class Fetch:
    """A stand-in for GitHub's installation-token call, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> tuple[str, datetime]:
        self.calls += 1
        return f"ghs_token_number_{self.calls:04d}", datetime.now(UTC) + timedelta(
            hours=1
        )


def test_the_token_is_reused_until_five_minutes_remain(clock):
    fetch = Fetch()
    assert GitHubToken.get_or_refresh(fetch) == "ghs_token_number_0001"

    clock.shift(timedelta(minutes=54, seconds=59))  # 5 min 1 s left
    assert GitHubToken.get_or_refresh(fetch) == "ghs_token_number_0001"
    assert fetch.calls == 1

    clock.shift(timedelta(seconds=2))  # 4 min 59 s left
    assert GitHubToken.get_or_refresh(fetch) == "ghs_token_number_0002"
    assert fetch.calls == 2


def test_the_token_is_encrypted_at_rest_and_lives_at_most_an_hour(clock):
    GitHubToken.get_or_refresh(lambda: ("ghs_never_expiring_pat_0000", None))

    row = GitHubToken.objects.get()
    assert "ghs_never" not in row.token_encrypted
    assert row.expires_at == T0 + timedelta(hours=1)
    assert row.lease_holder is None  # released after the refresh


def test_a_second_caller_during_a_refresh_waits_and_gets_the_new_token(clock):
    fetch = Fetch()
    GitHubToken.get_or_refresh(fetch)
    clock.shift(timedelta(minutes=58))
    # Worker A has taken the lease and is fetching a new token.
    worker_a = GitHubToken.objects.get()
    worker_a.acquire_lease("worker:a")

    def a_finishes_while_b_waits(seconds: float) -> None:
        worker_a.store("ghs_fetched_by_worker_a_0000", None)
        worker_a.save(release_lease=True)

    fetch_b = Fetch()
    token = GitHubToken.get_or_refresh(
        fetch_b, holder="worker:b", sleep=a_finishes_while_b_waits
    )

    assert token == "ghs_fetched_by_worker_a_0000"
    assert fetch_b.calls == 0
    assert GitHubToken.objects.get().lease_holder is None


def test_a_failed_fetch_releases_the_lease(clock):
    def broken() -> tuple[str, datetime]:
        raise ConnectionError("github unreachable")

    with pytest.raises(ConnectionError):
        GitHubToken.get_or_refresh(broken)

    assert GitHubToken.objects.get().lease_holder is None


def test_replacing_the_token_without_the_lease_is_refused(clock):
    GitHubToken.get_or_refresh(Fetch())
    row = GitHubToken.objects.get()

    row.store("ghs_sneaky_unleased_write_00", None)
    with pytest.raises(LeaseRequired):
        row.save()
