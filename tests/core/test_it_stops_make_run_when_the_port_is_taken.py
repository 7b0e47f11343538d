"""`make run` (manage.py codex_run) on a port already taken stops at once,
before migrating or starting anything, with a non-zero status and the
`PORT=` hint; and a console or worker that stops by itself is a failure too,
never a quiet exit 0."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from codex.core.management.commands import codex_run


def test_a_taken_port_stops_it_before_anything_else(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env["CODEX_VAR_DIR"] = str(tmp_path)
        result = subprocess.run(
            [sys.executable, "manage.py", "codex_run", "--prepare"]
            + ["--addrport", f"127.0.0.1:{port}"],
            cwd=settings.BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert result.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
    assert f"make run PORT={port + 1}" in result.stderr
    assert "Codex console on" not in result.stdout  # no banner first
    assert not (tmp_path / "codex.sqlite3").exists()  # nothing migrated


class FakeChild:
    """A child process that has exited (`code`) or runs until terminated."""

    def __init__(self, code: int | None) -> None:
        self.returncode = code

    def poll(self) -> int | None:
        return self.returncode

    def terminate(self) -> None:
        self.returncode = -15

    def kill(self) -> None:
        self.returncode = -9

    def wait(self, timeout: float | None = None) -> int:
        return self.returncode


@pytest.mark.parametrize("code", [1, 0])
def test_a_child_that_stops_by_itself_fails_the_command(monkeypatch, code):
    children = iter([FakeChild(code), FakeChild(None)])  # the web, the worker
    monkeypatch.setattr(codex_run.subprocess, "Popen", lambda *a, **k: next(children))
    monkeypatch.setattr(codex_run.signal, "signal", lambda *args: None)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(CommandError) as failure:
        call_command("codex_run", addrport=f"127.0.0.1:{port}")
    assert "the web stopped by itself" in str(failure.value)
    assert failure.value.returncode == (code or 1)


def test_a_bad_address_is_refused_with_the_reason():
    with pytest.raises(CommandError, match="port must be a number"):
        call_command("codex_run", addrport="127.0.0.1:http")
