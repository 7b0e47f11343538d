"""Test-wide fixtures and rules.

- `@pytest.mark.postgresql` tests skip on SQLite with a visible reason; with
  CODEX_REQUIRE_POSTGRESQL=1 (CI's PostgreSQL run) nothing may be skipped at all.
- With CODEX_DATABASE_TESTS_ONLY=1 (CI's SQLite run, beside the PostgreSQL
  run that runs everything) the tests that use no database are deselected:
  their outcome does not depend on which database is configured.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from django.conf import settings

REQUIRE_POSTGRESQL = os.environ.get("CODEX_REQUIRE_POSTGRESQL") == "1"
DATABASE_TESTS_ONLY = os.environ.get("CODEX_DATABASE_TESTS_ONLY") == "1"
# A test with one of these fixtures (directly or through others) uses the database.
DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "live_server",
}
TOOLCHAIN_PATHS = sorted({sys.prefix, sys.base_prefix})


def pytest_configure(config) -> None:
    # WhiteNoise warns on every request when the static folder does not exist.
    Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
    if REQUIRE_POSTGRESQL and not settings.IS_POSTGRESQL:
        raise pytest.UsageError(
            "CODEX_REQUIRE_POSTGRESQL=1 but DATABASE_URL does not point at PostgreSQL"
        )


def uses_the_database(item) -> bool:
    return item.get_closest_marker("django_db") is not None or bool(
        DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
    )


def pytest_collection_modifyitems(config, items) -> None:
    if DATABASE_TESTS_ONLY and not REQUIRE_POSTGRESQL:
        deselected = [item for item in items if not uses_the_database(item)]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [item for item in items if uses_the_database(item)]
    if settings.IS_POSTGRESQL:
        return
    skip = pytest.mark.skip(
        reason="needs PostgreSQL (set DATABASE_URL=postgres://...): "
        "row locks, concurrent writers, triggers"
    )
    for item in items:
        if "postgresql" in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus) -> None:
    if not REQUIRE_POSTGRESQL:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if skipped:
        reporter.write_line(
            f"CODEX_REQUIRE_POSTGRESQL=1: {skipped} test(s) were skipped; "
            "the PostgreSQL run must skip none",
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _isolated_settings(settings, tmp_path):
    settings.CODEX_RUN_JOBS_INLINE = False
    settings.CODEX_LEASE_RETRY_BACKOFF_SECONDS = 0
    settings.CODEX_PHASE_RUNNER = "codex.tasks.runners.UnconfiguredPhaseRunner"
    # Real hashing makes every user a tenth of a second; tests make many.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Commands run in the jail see this venv (and the Python it was made from)
    # read-only: the test projects' pytest is there.
    settings.CODEX_SANDBOX_READONLY_PATHS = TOOLCHAIN_PATHS
    # Setups made in one test are never copied into another's worktree.
    settings.CODEX_SETUP_CACHE_ROOT = str(tmp_path / "setup-cache")
    settings.CODEX_REPO_MAP_CACHE_DIR = str(tmp_path / "repo-map")
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {
            "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        },
    }


@pytest.fixture(autouse=True)
def _fresh_shared_throttle_counts():
    """API throttle counts (CACHES["throttle"]) outlive a test's database."""
    from django.core.cache import caches

    caches["throttle"].clear()


@pytest.fixture
def scripted_runner(settings):
    """Install the scripted phase runner; returns it so tests queue results."""
    from tests.phase_runner import ScriptedPhaseRunner

    ScriptedPhaseRunner.reset()
    settings.CODEX_PHASE_RUNNER = "tests.phase_runner.ScriptedPhaseRunner"
    return ScriptedPhaseRunner


@pytest.fixture
def operator(db):
    """A superuser: what the operator console's people are."""
    from tests.factories import make_user

    return make_user("alice", is_staff=True, is_superuser=True)


@pytest.fixture
def console(client, operator):
    """A test client logged in to the admin as a superuser."""
    client.force_login(operator)
    return client
