"""A throttle turned off (`off`, or a rate no client reaches) lets requests
through without touching the throttle cache, in the database cache's case five
statements a request; a real rate is still counted."""

from __future__ import annotations

import pytest
from django.core.cache import caches

from codex.core.api.throttles import THROTTLE_CACHE, configured_rate

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("rate", ["off", "OFF", "", "none", "100000000/second"])
def test_it_reads_off_and_huge_rates_as_none(settings, rate):
    settings.CODEX_API_USER_RATE = rate
    assert configured_rate("CODEX_API_USER_RATE", "600/minute") is None


def test_it_keeps_a_real_rate(settings):
    settings.CODEX_API_USER_RATE = "999/second"
    assert configured_rate("CODEX_API_USER_RATE", "600/minute") == "999/second"


def _spy_on_cache(monkeypatch) -> list[str]:
    calls: list[str] = []
    cache = caches[THROTTLE_CACHE]
    for name in ("get", "set", "get_many"):
        real = getattr(cache, name)

        def spy(*args, _name=name, _real=real, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(cache, name, spy)
    return calls


def test_an_off_rate_reads_and_writes_no_cache(settings, api_client, monkeypatch):
    settings.CODEX_API_USER_RATE = "off"
    settings.CODEX_API_ANON_RATE = "off"
    settings.CODEX_API_FAILED_AUTH_RATE = "off"
    calls = _spy_on_cache(monkeypatch)
    for _ in range(3):
        assert api_client.get("/api/tasks/").status_code == 200
    assert calls == []


def test_a_real_rate_is_still_counted(settings, api_client, monkeypatch):
    settings.CODEX_API_USER_RATE = "2/minute"
    calls = _spy_on_cache(monkeypatch)
    assert api_client.get("/api/tasks/").status_code == 200
    assert "set" in calls
    assert api_client.get("/api/tasks/").status_code == 200
    assert api_client.get("/api/tasks/").status_code == 429
