"""The file tools touch regular files only: a named pipe, a socket or a link
to one, made by the agent in its worktree, is skipped by search and listing
and refused by read, edit and write with what it is, and never hangs a call.
"""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from agents.sandbox import Sandbox
from tests.agents.git_worktrees import git_worktree


def call(sandbox, name, arguments, within=20.0):
    """The tool's outcome, or a failure when it has not answered `within`
    seconds (on a pipe, the old tools blocked for ever)."""
    tool = {t.name: t for t in sandbox.tools()}[name]
    answers = []
    worker = threading.Thread(
        target=lambda: answers.append(tool.call(arguments)), daemon=True
    )
    started = time.monotonic()
    worker.start()
    worker.join(within)
    assert answers, f"{name} did not answer within {within}s"
    return answers[0], time.monotonic() - started


@pytest.fixture(params=["plain folder", "git worktree"])
def sandbox(request, tmp_path, worktree):
    root = worktree
    if request.param == "git worktree":
        root = git_worktree(
            tmp_path / "repo", {"README.md": "needle\n", "src/app.py": "x = 1\n"}
        )
    os.mkfifo(root / "pipe")
    (root / "to_pipe").symlink_to(root / "pipe")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(root / "sock"))
    yield Sandbox(root, allowed_commands=[], tool_timeout=5)
    listener.close()


def test_search_and_listing_skip_pipes_and_sockets_and_answer_in_time(sandbox):
    found, seconds = call(sandbox, "search", {"pattern": "needle"})
    assert not found.is_error, found.content
    assert "pipe" not in found.content and "sock" not in found.content
    assert seconds < 5
    listed, _ = call(sandbox, "list_files", {})
    names = listed.content.splitlines()
    assert "README.md" in names
    assert not {"pipe", "to_pipe", "sock"} & set(names)


@pytest.mark.parametrize("path", ["pipe", "to_pipe"])
def test_reading_a_pipe_is_refused_with_the_reason(sandbox, path):
    read, seconds = call(sandbox, "read_file", {"path": path})
    assert read.is_error
    assert "is a named pipe (FIFO)" in read.content
    assert "regular files only" in read.content
    assert seconds < 5


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("edit_file", {"path": "pipe", "old": "a", "new": "b"}),
        ("write_file", {"path": "pipe", "content": "x"}),
        ("write_file", {"path": "to_pipe", "content": "x"}),
        ("multi_edit", {"path": "pipe", "edits": [{"old": "a", "new": "b"}]}),
        ("read_file", {"path": "sock"}),
        ("write_file", {"path": "sock", "content": "x"}),
        ("move_file", {"source": "pipe", "destination": "moved"}),
    ],
)
def test_writing_over_a_pipe_or_socket_is_refused(sandbox, name, arguments):
    outcome, _ = call(sandbox, name, arguments)
    assert outcome.is_error
    assert "regular files only" in outcome.content
    assert (sandbox.root / "pipe").is_fifo()
    assert (sandbox.root / "sock").is_socket()
    assert not (sandbox.root / "moved").exists()


def test_a_pipe_made_by_a_jailed_command_does_not_hang_search(worktree):
    sandbox = Sandbox(worktree, tool_timeout=5)
    made = sandbox.run_shell("mkfifo x && echo needle > y.txt")
    assert made.ok, made.output
    assert (worktree / "x").is_fifo()
    found, seconds = call(sandbox, "search", {"pattern": "needle"})
    assert found.content == "y.txt:1:needle"
    assert seconds < 5
    read, _ = call(sandbox, "read_file", {"path": "x"})
    assert read.is_error and "named pipe" in read.content
