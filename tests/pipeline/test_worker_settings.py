"""The django-q2 cluster settings that keep a slow step from running twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

REPO_ROOT = Path(__file__).resolve().parents[2]
PRINT_Q_CLUSTER = (
    "import django, json, os\n"
    "os.environ['DJANGO_SETTINGS_MODULE'] = 'codex.settings'\n"
    "django.setup()\n"
    "from django.conf import settings\n"
    "print(json.dumps(settings.Q_CLUSTER))\n"
)


def run_settings(tmp_path, code: str, **env: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter: our environment without the worker and
    Redis variables, plus `env`."""
    environ = {
        name: value
        for name, value in os.environ.items()
        if name != "REDIS_URL" and not name.startswith("CODEX_JOB_")
    }
    environ.update(
        CODEX_TESTING="1",  # no secret key file is written
        CODEX_VAR_DIR=str(tmp_path),
        **env,
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        env=environ,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def q_cluster(completed: subprocess.CompletedProcess) -> dict:
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_a_job_times_out_before_it_is_retried():
    cluster = settings.Q_CLUSTER
    assert cluster["timeout"] < cluster["retry"]
    assert isinstance(cluster["max_attempts"], int)
    assert cluster["max_attempts"] >= 1
    assert cluster["ack_failures"] is True


@pytest.mark.skipif(bool(os.environ.get("REDIS_URL")), reason="REDIS_URL is set")
def test_without_redis_the_broker_is_the_database():
    assert settings.Q_CLUSTER["orm"] == "default"
    assert "redis" not in settings.Q_CLUSTER


def test_a_fresh_process_without_redis_uses_the_orm_broker(tmp_path):
    cluster = q_cluster(run_settings(tmp_path, PRINT_Q_CLUSTER))

    assert cluster["orm"] == "default"
    assert "redis" not in cluster
    assert (cluster["timeout"], cluster["retry"], cluster["max_attempts"]) == (
        7200,  # above the longest agent time budget
        7500,
        3,
    )


def test_with_redis_the_broker_is_redis(tmp_path):
    cluster = q_cluster(
        run_settings(tmp_path, PRINT_Q_CLUSTER, REDIS_URL="redis://127.0.0.1:1/0")
    )

    assert cluster["redis"] == "redis://127.0.0.1:1/0"
    assert "orm" not in cluster


def test_the_environment_sets_timeout_retry_and_attempts(tmp_path):
    cluster = q_cluster(
        run_settings(
            tmp_path,
            PRINT_Q_CLUSTER,
            CODEX_JOB_TIMEOUT="100",
            CODEX_JOB_RETRY="150",
            CODEX_JOB_MAX_ATTEMPTS="5",
        )
    )
    assert (cluster["timeout"], cluster["retry"], cluster["max_attempts"]) == (
        100,
        150,
        5,
    )


@pytest.mark.parametrize("retry", ["50", "100"])
def test_a_retry_not_above_the_timeout_is_refused_at_start_up(tmp_path, retry):
    completed = run_settings(
        tmp_path, PRINT_Q_CLUSTER, CODEX_JOB_TIMEOUT="100", CODEX_JOB_RETRY=retry
    )

    assert completed.returncode != 0
    assert "ImproperlyConfigured" in completed.stderr
    assert (
        f"CODEX_JOB_RETRY ({retry}) must be greater than CODEX_JOB_TIMEOUT (100)"
        in completed.stderr
    )


def test_the_default_retry_follows_a_raised_timeout(tmp_path):
    cluster = q_cluster(
        run_settings(tmp_path, PRINT_Q_CLUSTER, CODEX_JOB_TIMEOUT="2000")
    )
    assert cluster["retry"] > cluster["timeout"] == 2000


@pytest.mark.parametrize("attempts", ["0", "unlimited"])
def test_an_unbounded_number_of_attempts_is_refused(tmp_path, attempts):
    completed = run_settings(tmp_path, PRINT_Q_CLUSTER, CODEX_JOB_MAX_ATTEMPTS=attempts)

    assert completed.returncode != 0
    assert "CODEX_JOB_MAX_ATTEMPTS" in completed.stderr
