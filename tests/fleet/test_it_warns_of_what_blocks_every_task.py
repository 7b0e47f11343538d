"""Installation-wide warnings on the dashboard, in the console and on
/healthz/workers, from what the workers report (codex.fleet.readiness): no
worker beating, no worker able to jail commands (with the fix the worker
gave, right for its container or machine), no model key. The web server's
own machine is not the judge."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from codex.configuration.models import Setting
from codex.fleet.readiness import installation_blockers
from tests.factories import make_user, make_worker_cluster

pytestmark = pytest.mark.django_db

CONTAINER_FIX = (
    "run the worker's container with --security-opt seccomp=unconfined "
    "--security-opt apparmor=unconfined --security-opt systempaths=unconfined"
)


@pytest.fixture(autouse=True)
def agent_runner(settings):
    """The default phase runner, which needs a model key; none configured."""
    settings.CODEX_PHASE_RUNNER = "agents.phase_runner.AgentPhaseRunner"
    settings.CODEX_CREDENTIALS = {**settings.CODEX_CREDENTIALS, "claude": []}


def codes() -> list[str]:
    return [blocker.code for blocker in installation_blockers()]


def test_a_healthy_worker_with_a_key_blocks_nothing():
    make_worker_cluster()
    assert installation_blockers() == []


def test_no_worker_beating_is_an_error():
    make_worker_cluster("gone", beat_seconds_ago=120)  # silent: not counted
    make_worker_cluster("stopping", stopping=True)
    blockers = installation_blockers()
    assert [blocker.code for blocker in blockers] == ["no_worker", "no_model_key"]
    assert "No worker is running" in blockers[0].message
    assert "codex_workers" in blockers[0].fix


def test_no_worker_with_a_jail_is_an_error_with_the_workers_own_fix():
    make_worker_cluster(
        "w1",
        jail_problem="bubblewrap cannot create namespaces here: "
        "Can't mount proc on /newroot/proc",
        jail_fix=CONTAINER_FIX,
    )
    (blocker,) = installation_blockers()
    assert blocker.code == "no_jail" and blocker.level == "error"
    assert "Can't mount proc" in blocker.message
    assert blocker.fix == CONTAINER_FIX


def test_one_worker_of_two_without_a_jail_is_a_warning():
    make_worker_cluster("w1")
    make_worker_cluster("w2", jail_problem="bubblewrap (bwrap) is not installed")
    (blocker,) = installation_blockers()
    assert blocker.code == "no_jail" and blocker.level == "warning"
    assert "1 of 2 workers" in blocker.message and "w2" in blocker.message


def test_no_model_key_on_any_worker_is_an_error():
    make_worker_cluster("w1", model_key=False)
    assert codes() == ["no_model_key"]
    make_worker_cluster("w2", model_key=True)
    assert codes() == []


def test_a_key_saved_in_the_console_counts_before_the_workers_report_it():
    make_worker_cluster("w1", model_key=False)
    Setting.objects.put("anthropic.api_key", "sk-ant-console", actor="user:op")
    assert codes() == []


def test_workers_with_another_runner_need_no_key():
    make_worker_cluster(
        "w1", model_key=False, phase_runner="tests.phase_runner.ScriptedPhaseRunner"
    )
    assert codes() == []


def test_unjailed_workers_are_named():
    make_worker_cluster("w1", backend="none")
    (blocker,) = installation_blockers()
    assert blocker.code == "unjailed" and "UNJAILED on w1" in blocker.message


def test_the_web_servers_own_missing_jail_is_not_a_warning(settings, monkeypatch):
    """Under compose the web container has no working jail, and needs none."""
    from integrations.jail import backends

    monkeypatch.setattr(backends.shutil, "which", lambda name, *a, **k: None)
    backends.forget_backends()
    make_worker_cluster("w1")
    assert codes() == []


def test_the_dashboard_and_the_console_show_them(console):
    make_worker_cluster(
        "w1",
        jail_problem="bubblewrap cannot create namespaces here",
        jail_fix="X",
        model_key=False,
    )
    client = Client()
    client.force_login(make_user("carol", role="team"))
    page = client.get(reverse("pages:dashboard")).content.decode()
    assert 'data-code="no_jail"' in page and 'data-code="no_model_key"' in page
    assert "Command jail:" in page and "Fix: X." in page
    assert "Model key:" in page and "ANTHROPIC_API_KEY" in page
    index = console.get(reverse("admin:index")).content.decode()
    assert "No worker can run agents&#x27; commands" in index
    assert "No model key" in index
