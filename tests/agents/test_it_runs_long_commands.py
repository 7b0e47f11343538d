"""A command may ask for a longer timeout, up to CODEX_SANDBOX_MAX_COMMAND_
TIMEOUT and the role's time budget; its output reaches `on_output` as it
comes, before the command ends."""

from __future__ import annotations

import time

import pytest

from agents.sandbox import Sandbox
from agents.tools import ToolError
from integrations.jail import Jail, Limits


@pytest.fixture
def jail(worktree, settings):
    settings.CODEX_SANDBOX_MAX_COMMAND_TIMEOUT = 10
    return Jail.for_worktree(
        worktree, limits=Limits(wall_seconds=1, cpu_seconds=1, output_chars=2000)
    )


def bash(sandbox):
    return {t.name: t for t in sandbox.tools()}["bash"]


def test_a_call_may_raise_its_timeout_up_to_the_maximum(worktree, jail):
    sandbox = Sandbox(worktree, jail=jail)
    slow = "sleep 2 && echo done"
    cut = bash(sandbox).call({"command": slow})
    assert cut.is_error and "timed out after 1s" in cut.content
    longer = bash(sandbox).call({"command": slow, "timeout": 5})
    assert not longer.is_error, longer.content
    assert longer.content == "exit code 0\ndone\n"
    # The CPU time follows the raised wall time up.
    busy = "end=$((SECONDS+2)); while [ $SECONDS -lt $end ]; do :; done; echo spun"
    spun = bash(sandbox).call({"command": busy, "timeout": 6})
    assert not spun.is_error, spun.content
    assert jail.limits.wall_seconds == 1  # the sandbox's own jail is unchanged


def test_past_the_maximum_is_refused(worktree, jail):
    sandbox = Sandbox(worktree, jail=jail)
    refused = bash(sandbox).call({"command": "echo ran", "timeout": 11})
    assert refused.is_error and "ran" not in refused.content
    with pytest.raises(ToolError, match="more than the 10s allowed"):
        sandbox.run_shell("echo ran", timeout=11)
    described = bash(sandbox).description
    assert "after 1s unless you set timeout (at most 10s)" in described


def test_the_maximum_follows_the_roles_time_budget(worktree, jail, settings):
    settings.CODEX_SANDBOX_MAX_COMMAND_TIMEOUT = 1800
    settings.CODEX_AGENT_MAX_SECONDS_RELEASE = "200"
    maxima = {
        role: bash(Sandbox(worktree, jail=jail, role=role)).input_schema["properties"][
            "timeout"
        ]["maximum"]
        for role in ("release", "developer", None)
    }
    assert maxima == {"release": 200, "developer": 1800, None: 1800}


def test_output_reaches_on_output_before_the_command_ends(worktree, jail):
    pieces: list[tuple[float, str]] = []
    sandbox = Sandbox(
        worktree,
        jail=jail,
        on_output=lambda text: pieces.append((time.monotonic(), text)),
    )
    result = sandbox.run_shell("echo first; sleep 2; echo second", timeout=6)
    ended = time.monotonic()
    assert result.ok, result.output
    assert "".join(text for _, text in pieces) == "first\nsecond\n"
    assert pieces[0][1].startswith("first")
    assert ended - pieces[0][0] > 1.5


def test_a_failing_on_output_does_not_stop_the_command(worktree, jail):
    def broken(text):
        raise ValueError("the log is down")

    sandbox = Sandbox(worktree, jail=jail, on_output=broken)
    result = sandbox.run_shell("echo one; echo two")
    assert result.ok and result.output == "one\ntwo\n"
