"""A cluster's sentinel calls CODEX_WORKER_WARM_UP once before it forks its
workers (codex.core.cluster_recovery), so every worker starts with the phase
runner imported and the model SDK's parsers built."""

from __future__ import annotations

import logging

from codex.core.cluster_recovery import ClusterKeeper
from integrations.anthropic.parsers import prepare_response_parsers

calls: list[str] = []


def record_call() -> None:
    calls.append("called")


def fail() -> None:
    raise RuntimeError("no model SDK here")


def test_it_calls_the_configured_warm_up(settings):
    calls.clear()
    settings.CODEX_WORKER_WARM_UP = f"{__name__}.record_call"
    ClusterKeeper._warm_up()
    assert calls == ["called"]


def test_a_failing_warm_up_leaves_it_to_the_workers(settings, caplog):
    settings.CODEX_WORKER_WARM_UP = f"{__name__}.fail"
    with caplog.at_level(logging.WARNING, logger="codex.core.cluster_recovery"):
        ClusterKeeper._warm_up()
    assert "could not prepare the workers" in caplog.text


def test_an_empty_setting_skips_it(settings):
    calls.clear()
    settings.CODEX_WORKER_WARM_UP = ""
    ClusterKeeper._warm_up()
    assert calls == []


def test_the_default_warm_up_builds_the_parsers():
    from agents.worker_warm_up import prepare_worker

    prepare_worker()
    assert prepare_response_parsers() == 0  # nothing left to build
