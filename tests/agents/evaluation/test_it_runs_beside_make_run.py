"""Eval and demo keep their own database and queue (var/eval/, var/demo/):
they succeed while `make run`'s worker runs, that worker never sees their
jobs, and the dashboard's figures are the same after them as before."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from agents.isolation import use_own_state
from tests.agents.evaluation.live import ROOT, environment, figures, js_case_folder, run

COUNT = (
    "import json\nfrom codex.tasks.models import Task\n"
    "from django_q.models import OrmQ\n"
    "print(json.dumps({'tasks': Task.objects.count(), 'queued': OrmQ.objects.count()}))"
)


def test_own_state_moves_the_database_and_drops_shared_services(tmp_path):
    environ = {
        "CODEX_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": "postgres://db/codex",
        "REDIS_URL": "redis://queue/0",
    }

    folder = use_own_state("eval", environ)

    assert folder == tmp_path / "var" / "eval"
    assert environ["CODEX_VAR_DIR"] == str(folder)
    assert "DATABASE_URL" not in environ and "REDIS_URL" not in environ
    # A child of that process (already pointed there) stays where it is.
    assert use_own_state("eval", environ) == folder


def counts(var, state: str) -> dict:
    done = run(["manage.py", "shell", "-c", COUNT], var / state if state else var)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_eval_and_demo_leave_make_runs_figures_alone(tmp_path):
    var = tmp_path / "var"
    assert run(["manage.py", "migrate", "--no-input"], var).returncode == 0
    log = (tmp_path / "worker.log").open("w")
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=ROOT,
        env=environment(var),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        time.sleep(3)
        assert worker.poll() is None, (tmp_path / "worker.log").read_text()
        before = figures(var)

        # Side by side, as a user might start them: each keeps its own state.
        cases = str(js_case_folder(tmp_path / "s"))
        with ThreadPoolExecutor(max_workers=2) as both:
            evaluating = both.submit(
                run, ["-m", "agents.evaluation", "--cases", cases], var
            )
            demo = both.submit(run, ["manage.py", "demo"], var).result()
            evaluated = evaluating.result()

        assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert "CODEX_VAR_DIR=" in demo.stdout  # how to see the demo's console
        assert worker.poll() is None
        assert figures(var) == before
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        log.close()
    assert counts(var, "")["tasks"] == 0
    evaluation, demos = counts(var, "eval"), counts(var, "demo")
    assert evaluation["tasks"] == 1 and demos["tasks"] == 1
    # Their own jobs wait in their own queues: the worker never took them.
    assert evaluation["queued"] > 0
