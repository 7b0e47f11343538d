"""The worker runtime names no app (docs/architecture.md#layers): a dead
worker's leases, a job given up and the workers' warm-up are what the apps
registered from their ready(); one handler failing does not stop the next."""

from __future__ import annotations

from codex.core.workers import hooks as worker_hooks
from codex.tasks import dead_workers
from codex.tasks.apps import warm_up_steps


def test_the_apps_registered_their_handlers():
    assert dead_workers.release_dead_worker in worker_hooks._DEAD_WORKER
    assert dead_workers.give_up_job in worker_hooks._GIVEN_UP_JOB
    assert warm_up_steps in worker_hooks._WARM_UP


def test_a_failing_handler_leaves_the_next_one_running(monkeypatch):
    seen = []

    def fails(holder, reason):
        raise RuntimeError("broken app")

    monkeypatch.setattr(worker_hooks, "_DEAD_WORKER", [])
    worker_hooks.on_dead_worker(fails)
    worker_hooks.on_dead_worker(lambda holder, reason: seen.append((holder, reason)))
    worker_hooks.on_dead_worker(fails)  # registered once only

    worker_hooks.dead_worker("worker:h:1", "its cluster died")

    assert seen == [("worker:h:1", "its cluster died")]
    assert len(worker_hooks._DEAD_WORKER) == 2


def test_no_core_module_names_an_app_by_its_path():
    from pathlib import Path

    core = Path(worker_hooks.__file__).parent
    apps = ("tasks", "fleet", "claims", "children", "github", "repositories")
    apps += ("notifications", "events", "webhooks", "configuration", "accounts")
    for path in core.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        text = path.read_text()
        for app in apps:
            assert f'"codex.{app}.' not in text, (path, app)
