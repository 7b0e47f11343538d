"""CODEX_SANDBOX picks the backend: auto never falls back to no jail in
silence, none is warned about everywhere, and the container backends start a
locked-down container and stop it on timeout."""

from __future__ import annotations

import logging
import shlex
import stat

import pytest

from codex.core.attention import attention_items
from integrations.jail import Jail, JailUnavailable, Limits, unjailed_warning
from integrations.jail import backends as backends_module
from integrations.jail.backends import ContainerBackend, backend_named


@pytest.fixture(autouse=True)
def fresh_backends():
    backends_module.forget_backends()
    yield
    backends_module.forget_backends()


def no_bubblewrap(monkeypatch) -> None:
    real_which = backends_module.shutil.which
    monkeypatch.setattr(
        backends_module.shutil,
        "which",
        lambda name, *a, **k: None if name == "bwrap" else real_which(name, *a, **k),
    )


def test_auto_without_bubblewrap_says_why_and_how_to_fix(monkeypatch, settings):
    no_bubblewrap(monkeypatch)
    settings.CODEX_SANDBOX = "auto"
    with pytest.raises(JailUnavailable) as info:
        backend_named("auto")
    assert "bubblewrap (bwrap) is not installed" in info.value.reason
    assert info.value.fix.startswith("apt-get install bubblewrap")
    warning = unjailed_warning()
    assert "cannot run commands" in warning and "apt-get install bubblewrap" in warning


def test_a_named_backend_that_is_missing_is_refused(settings):
    settings.CODEX_SANDBOX = "podman"
    if backends_module.shutil.which("podman"):
        pytest.skip("podman is installed here")
    with pytest.raises(JailUnavailable, match="podman command is not installed"):
        backend_named("podman")


def test_none_runs_unjailed_and_is_warned_about(db, settings, tmp_path, caplog):
    settings.CODEX_SANDBOX = "none"
    with caplog.at_level(logging.WARNING, logger="integrations.jail"):
        jail = Jail.for_worktree(tmp_path)
    assert not jail.jailed
    assert "unjailed" in caplog.text
    result = jail.run(["bash", "-c", "echo $HOME; pwd"])
    home, cwd = result.output.split()
    assert cwd == str(tmp_path.resolve())
    assert not home.startswith(str(tmp_path))  # never a folder of the worktree
    assert "UNJAILED" in unjailed_warning()
    assert any("UNJAILED" in item.message for item in attention_items())


def test_the_dashboard_shows_the_warning(db, settings, client, django_user_model):
    settings.CODEX_SANDBOX = "none"
    user = django_user_model.objects.create_superuser("op", "op@example.com", "pw")
    client.force_login(user)
    page = client.get("/dashboard/").content.decode()
    assert "Command jail:" in page and "UNJAILED" in page
    settings.CODEX_SANDBOX = "bubblewrap"
    backends_module.forget_backends()
    try:
        backend_named("bubblewrap")
    except JailUnavailable:
        return
    assert "Command jail:" not in client.get("/dashboard/").content.decode()


FAKE_CLI = """#!/bin/sh
echo "$@" >> {log}
if [ "$1" = run ]; then
  case "$*" in *sleep*) exec sleep 30;; esac
  echo container-ran
fi
"""


def test_the_container_backend_locks_the_container_down(tmp_path):
    log = tmp_path / "calls.log"
    cli = tmp_path / "docker"
    cli.write_text(FAKE_CLI.format(log=log))
    cli.chmod(cli.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text("gitdir: /elsewhere\n")
    backend = ContainerBackend("docker")
    backend.executable = str(cli)
    jail = Jail(
        worktree=tmp_path / "wt",
        backend=backend,
        limits=Limits(wall_seconds=2, max_processes=64, memory_mb=512),
        image="python:3.11-slim-bookworm",
    )
    result = jail.run(["pytest", "-q"], cwd=".")
    assert "container-ran" in result.output
    argv = shlex.split(log.read_text().splitlines()[0])
    for flag in (
        ["--network", "none"],
        ["--read-only"],
        ["--cap-drop", "ALL"],
        ["--pids-limit", "64"],
        ["--memory", "512m"],
        ["--user", "1000:1000"],
        ["--security-opt", "no-new-privileges"],
    ):
        start = argv.index(flag[0])
        assert argv[start : start + len(flag)] == flag
    assert f"{tmp_path / 'wt'}:/workspace" in argv
    assert "/dev/null:/workspace/.git:ro" in argv
    assert argv[-3:] == ["python:3.11-slim-bookworm", "pytest", "-q"]
    assert not any("SECRET" in arg or "TOKEN" in arg for arg in argv)

    stopped = jail.run(["sleep", "30"])
    assert stopped.timed_out
    calls = log.read_text().splitlines()
    assert calls[-1].startswith("kill codex-jail-")
