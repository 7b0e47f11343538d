"""The container backends (docker, podman) get the jail's limits from the
engine's own options: one memory limit with no swap, sized tmpfs folders and
/dev/shm, processes, CPU and file size; and the worktree's quota is watched
from the host as for bubblewrap, stopping the container. No engine runs
here: a fake CLI records the command line and plays the container."""

from __future__ import annotations

import shlex
import stat
import time

import pytest

from integrations.jail import Jail, Limits
from integrations.jail.backends import ContainerBackend

FAKE_CLI = """#!/bin/sh
echo "$@" >> {log}
if [ "$1" = run ]; then
  case "$*" in *fill*) head -c 80M /dev/zero > "$PWD/big.bin"; exec sleep 30;; esac
  echo container-ran
fi
"""


@pytest.fixture
def container(tmp_path):
    log = tmp_path / "calls.log"
    cli = tmp_path / "docker"
    cli.write_text(FAKE_CLI.format(log=log))
    cli.chmod(cli.stat().st_mode | stat.S_IEXEC)
    worktree = tmp_path / "wt"
    worktree.mkdir()
    backend = ContainerBackend("docker")
    backend.executable = str(cli)
    jail = Jail(
        worktree=worktree,
        backend=backend,
        limits=Limits(
            wall_seconds=60,
            cpu_seconds=30,
            memory_mb=1024,
            max_processes=64,
            max_file_mb=100,
            worktree_quota_mb=50,
        ),
        image="python:3.11-slim-bookworm",
    )
    return jail, log


def options(argv: list[str], name: str) -> list[str]:
    return [argv[at + 1] for at, arg in enumerate(argv) if arg == name]


def test_the_engine_is_given_every_limit(container):
    jail, log = container
    assert "container-ran" in jail.run(["true"]).output
    argv = shlex.split(log.read_text().splitlines()[0])
    assert options(argv, "--memory") == ["1024m"]
    # Memory plus swap equal to memory: no swap at all.
    assert options(argv, "--memory-swap") == ["1024m"]
    assert options(argv, "--pids-limit") == ["64"]
    assert options(argv, "--ulimit") == ["cpu=30", f"fsize={100 * 1024 * 1024}"]
    # The tmpfs folders add up to the memory limit, as in bubblewrap.
    assert options(argv, "--tmpfs") == [
        f"/tmp:size={512 * 1024 * 1024}",
        f"/home/codex:size={256 * 1024 * 1024}",
    ]
    assert options(argv, "--shm-size") == [str(256 * 1024 * 1024)]
    assert "--read-only" in argv


def test_a_container_filling_its_worktree_is_stopped(container):
    jail, log = container
    started = time.monotonic()
    result = jail.run(["fill"])
    assert time.monotonic() - started < 15
    assert result.limit == "disk" and "big.bin" in result.note
    assert log.read_text().splitlines()[-1].startswith("kill codex-jail-")
