"""The fix Codex prints for a jail that cannot run is right for where it
runs: inside a container, the security options the container needs (or an
image with bubblewrap); on a machine of its own, apt-get and the sysctl. And
a worker's health report probes afresh, so installing bubblewrap shows
without a restart."""

from __future__ import annotations

import pytest

from integrations.jail import backends
from integrations.jail.backends import BubblewrapBackend
from integrations.jail.health import in_container, jail_health

pytestmark = pytest.mark.django_db


@pytest.fixture
def host(monkeypatch):
    for name in ("CODEX_IN_CONTAINER", "container", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("integrations.jail.health.Path.exists", lambda self: False)


@pytest.fixture
def container(monkeypatch):
    monkeypatch.setenv("CODEX_IN_CONTAINER", "1")


def failing_bwrap(tmp_path, stderr: str) -> str:
    fake = tmp_path / "bwrap"
    (tmp_path / "said").write_text(stderr + "\n")
    fake.write_text(f"#!/bin/sh\ncat '{tmp_path / 'said'}' >&2\nexit 1\n")
    fake.chmod(0o755)
    return str(fake)


def test_only_explicit_signs_say_container(host, monkeypatch):
    assert not in_container()  # /.dockerenv alone does not count
    monkeypatch.setenv("container", "podman")
    assert in_container()
    monkeypatch.setenv("CODEX_IN_CONTAINER", "0")
    assert not in_container()


def test_in_a_container_the_fix_is_the_security_options(container, tmp_path):
    stderr = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
    problem = BubblewrapBackend(failing_bwrap(tmp_path, stderr)).problem()
    assert "Can't mount proc on /newroot/proc" in problem.reason
    for option in ("seccomp", "apparmor", "systempaths"):
        assert f"--security-opt {option}=unconfined" in problem.fix
    assert "apt-get" not in problem.fix and "sysctl" not in problem.fix


def test_on_a_machine_the_fix_is_the_sysctl(host, tmp_path):
    stderr = "bwrap: No permissions to creating new namespace"
    problem = BubblewrapBackend(failing_bwrap(tmp_path, stderr)).problem()
    assert "sysctl -w kernel.unprivileged_userns_clone=1" in problem.fix
    assert "security-opt" not in problem.fix


def test_bubblewrap_missing_in_a_container_needs_another_image(container, monkeypatch):
    monkeypatch.setattr(backends.shutil, "which", lambda name, *a, **k: None)
    problem = BubblewrapBackend().problem()
    assert problem.fix.startswith("install bubblewrap in the worker's image")


def test_bubblewrap_missing_on_a_machine_is_apt_get(host, monkeypatch):
    monkeypatch.setattr(backends.shutil, "which", lambda name, *a, **k: None)
    assert BubblewrapBackend().problem().fix.startswith("apt-get install bubblewrap")


def test_the_report_probes_afresh(host, settings, monkeypatch):
    settings.CODEX_SANDBOX = "auto"
    real_which = backends.shutil.which
    monkeypatch.setattr(backends.shutil, "which", lambda name, *a, **k: None)
    missing = jail_health()
    assert missing.problem == "bubblewrap (bwrap) is not installed"
    assert missing.fix.startswith("apt-get install bubblewrap")
    monkeypatch.setattr(backends.shutil, "which", real_which)
    if real_which("bwrap") is None:
        pytest.skip("bubblewrap is not installed here")
    installed = jail_health()
    assert installed.works and installed.backend == "bubblewrap"
    assert installed.as_dict()["problem"] == ""
