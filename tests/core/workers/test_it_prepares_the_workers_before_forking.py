"""A cluster's sentinel calls CODEX_WORKER_WARM_UP once before it forks its
workers (codex.core.workers.cluster_recovery), so every worker starts with the phase
runner imported and the model SDK's parsers built."""

from __future__ import annotations

import json
import logging

import pytest

from codex.core.workers.brokers import ClaimingORM
from codex.core.workers.cluster_recovery import ClusterKeeper
from integrations.anthropic.parsers import prepare_response_parsers
from tests.fresh_process import last_line_of

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
    with caplog.at_level(logging.WARNING, logger="codex.core.workers.cluster_recovery"):
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


# What a worker's first step or job would import itself; in a fresh process.
FIRST_STEP_IMPORTS = (
    "codex.repositories.local_forge",
    "integrations.github.forge",
    "codex.tasks.progress",
    "codex.notifications.jobs",
    "httpcore2",
    "opentelemetry.propagate",
)
SCRIPT = """
import json, sys
import django
django.setup()
import codex.tasks.jobs  # what the cluster keeper imports first
before = [m for m in json.loads(sys.argv[1]) if m in sys.modules]
from agents.worker_warm_up import prepare_worker
prepare_worker()
after = [m for m in json.loads(sys.argv[1]) if m in sys.modules]
print(json.dumps([before, after]))
"""


def test_the_workers_inherit_what_a_first_step_would_import():
    before, after = json.loads(last_line_of(SCRIPT, json.dumps(FIRST_STEP_IMPORTS)))
    assert before == [], "the control: none of them is imported yet"
    assert after == list(FIRST_STEP_IMPORTS)


# How many times a forked worker loads the CA bundle while it makes two model
# SDK clients, with (`warm`) or without the sentinel's warm-up before the fork.
TLS_SCRIPT = """
import os, ssl, sys
import django
django.setup()
loads = []
original = ssl.SSLContext.load_verify_locations
def counting(self, *args, **kwargs):
    loads.append(1)
    return original(self, *args, **kwargs)
ssl.SSLContext.load_verify_locations = counting
if sys.argv[1] == "warm":
    from agents.worker_warm_up import prepare_worker
    prepare_worker()
read, write = os.pipe()
if os.fork() == 0:
    loads.clear()
    from integrations.anthropic.client import _new_sdk
    for key in ("first", "second"):
        _new_sdk(key, "http://127.0.0.1:9", 5.0, 0).close()
    os.write(write, str(len(loads)).encode())
    os._exit(0)
os.wait()
print(os.read(read, 64).decode())
"""


def test_the_workers_inherit_the_tls_context():
    assert int(last_line_of(TLS_SCRIPT, "cold")) == 1  # once per process
    assert int(last_line_of(TLS_SCRIPT, "warm")) == 0


# A forked worker's full collection, with (`freeze`) or without the sentinel
# freezing its heap first: how many objects the collector walks in the worker.
FORK_SCRIPT = """
import gc, json, os, sys
import django
django.setup()
from agents.worker_warm_up import prepare_worker
prepare_worker()
if sys.argv[1] == "freeze":
    from codex.core.workers.cluster_recovery import ClusterKeeper
    ClusterKeeper._freeze_heap()
read, write = os.pipe()
if os.fork() == 0:
    tracked = sum(gc.get_count()) + len(gc.get_objects(generation=2))
    os.write(write, str(tracked).encode())
    os._exit(0)
os.wait()
print(os.read(read, 64).decode())
"""


def objects_a_forked_worker_collects(mode: str) -> int:
    return int(last_line_of(FORK_SCRIPT, mode))


def test_the_workers_collect_none_of_the_heap_they_inherit():
    inherited = objects_a_forked_worker_collects("cold")
    assert inherited > 100_000  # the control: Django and the apps
    assert objects_a_forked_worker_collects("freeze") < inherited / 100


@pytest.mark.django_db
def test_a_starting_cluster_freezes_its_heap_after_the_warm_up(monkeypatch):
    done: list[str] = []
    monkeypatch.setattr(
        ClusterKeeper, "_warm_up", staticmethod(lambda: done.append("warm-up"))
    )
    monkeypatch.setattr(
        "codex.core.workers.cluster_recovery.gc.freeze", lambda: done.append("freeze")
    )
    ClusterKeeper(ClaimingORM(), sentinel=None).start()
    assert done == ["warm-up", "freeze"]
