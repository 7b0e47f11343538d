"""Every file tool call has a wall-time limit of its own: a call stuck on
something answers an error at its limit instead of hanging the worker, and a
long walk stops by itself at its deadline."""

from __future__ import annotations

import os
import threading
import time

from agents import reading
from agents.sandbox import WRITE_TOOLS, Sandbox
from agents.tools import Tool, _schema


def test_a_stuck_handler_answers_an_error_at_its_limit(tmp_path):
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    # Opening a pipe with no writer blocks for ever: a stuck tool.
    stuck = Tool("stuck", "", _schema({}), lambda a: pipe.read_text(), timeout=0.5)
    started = time.monotonic()
    outcome = stuck.call({})
    assert time.monotonic() - started < 3
    assert outcome.is_error and not outcome.record.success
    assert "took longer than its 0.5s limit" in outcome.content
    # Unblock the abandoned thread so it ends.
    with open(pipe, "w"):
        pass


def test_every_file_tool_of_the_sandbox_has_the_limit(worktree, settings):
    settings.CODEX_SANDBOX_FILE_TOOL_TIMEOUT = 7
    tools = Sandbox(worktree, allowed_commands=[]).tools()
    file_tools = {"list_files", "read_file", "search"} | WRITE_TOOLS
    assert {t.name: t.timeout for t in tools if t.name in file_tools} == dict.fromkeys(
        file_tools, 7
    )
    assert "stops after 7s" in {t.name: t for t in tools}["search"].description


def test_a_stuck_read_in_the_sandbox_returns_within_its_limit(worktree, monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(reading, "looks_binary", lambda fd: release.wait(30))
    sandbox = Sandbox(worktree, allowed_commands=[], tool_timeout=0.5)
    read = {t.name: t for t in sandbox.tools()}["read_file"]
    started = time.monotonic()
    outcome = read.call({"path": "README.md"})
    assert time.monotonic() - started < 3
    assert outcome.is_error and "limit" in outcome.content
    release.set()


def test_a_long_listing_stops_by_itself_at_its_deadline(worktree, monkeypatch):
    for folder in range(200):
        (worktree / f"d{folder:03}").mkdir()
        (worktree / f"d{folder:03}" / "f.txt").write_text("x")
    sandbox = Sandbox(worktree, allowed_commands=[], tool_timeout=0.3)
    real_walk = os.walk

    def slow_walk(*args, **kwargs):
        for entry in real_walk(*args, **kwargs):
            time.sleep(0.01)
            yield entry

    monkeypatch.setattr(os, "walk", slow_walk)
    listed = {t.name: t for t in sandbox.tools()}["list_files"].call({})
    assert listed.is_error
    assert "stopped at the tool's time limit while listing files" in listed.content
