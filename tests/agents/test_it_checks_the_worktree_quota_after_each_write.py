"""The file tools are held to the worktree's disk quota too: once a write,
an edit or a move leaves the worktree over it, the tool answers an error
that names the quota and what fills the worktree."""

from __future__ import annotations

import pytest

from agents.sandbox import Sandbox
from agents.tools import ToolError
from integrations.jail import Jail, Limits
from integrations.jail.backends import HostBackend
from integrations.jail.quota import MEGABYTE


@pytest.fixture
def sandbox(tmp_path):
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    # 16 MB filled but 2 MB at the start; each write may be 1 MB.
    (worktree / "dataset.csv").write_bytes(b"x" * 14 * MEGABYTE)
    jail = Jail(
        worktree=worktree.resolve(),
        backend=HostBackend(),
        limits=Limits(worktree_quota_mb=16),
    )
    return Sandbox(worktree, jail=jail, max_write_bytes=MEGABYTE)


def test_a_write_past_the_quota_is_an_error_naming_what_fills_it(sandbox):
    sandbox.write_file("one.txt", "y" * 900_000)
    with pytest.raises(ToolError) as refused:
        for number in range(2, 5):
            sandbox.write_file(f"{number}.txt", "y" * 900_000)
    message = str(refused.value)
    assert "over its disk quota of 16 MB" in message
    assert "dataset.csv" in message


def test_an_edit_and_a_move_are_checked_too(sandbox):
    sandbox.write_file("notes.txt", "short")
    (sandbox.root / "filler.bin").write_bytes(b"z" * 2 * MEGABYTE)
    with pytest.raises(ToolError, match="disk quota"):
        sandbox.edit_file("notes.txt", "short", "longer")
    with pytest.raises(ToolError, match="disk quota"):
        sandbox.move_file("notes.txt", "moved.txt")
    (sandbox.root / "filler.bin").unlink()
    assert sandbox.move_file("moved.txt", "back.txt")[1] == ["moved.txt", "back.txt"]
