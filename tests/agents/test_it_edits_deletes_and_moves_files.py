"""The sandbox's file tools: edit_file with replace_all keeps line endings,
delete_file and move_file stay inside the worktree, read-only roles get none
of them."""

from __future__ import annotations

import pytest

from agents.sandbox import WRITE_TOOLS, Sandbox
from agents.tools import ToolError


@pytest.fixture
def sandbox(worktree):
    return Sandbox(worktree, allowed_commands=[])


def test_replace_all_replaces_every_occurrence_and_keeps_crlf(sandbox, worktree):
    (worktree / "win.txt").write_bytes(b"a = 1\r\nb = a\r\nc = a\r\n")
    with pytest.raises(ToolError, match="occurs 3 times.*replace_all"):
        sandbox.edit_file("win.txt", "a", "x")
    text, changed = sandbox.edit_file("win.txt", "a", "alpha", replace_all=True)
    assert "3 occurrences" in text and changed == ["win.txt"]
    assert (worktree / "win.txt").read_bytes() == (
        b"alpha = 1\r\nb = alpha\r\nc = alpha\r\n"
    )


def test_delete_file_removes_one_file_and_refuses_folders(sandbox, worktree):
    text, changed = sandbox.delete_file("README.md")
    assert changed == ["README.md"] and not (worktree / "README.md").exists()
    assert "README.md" in sandbox.files_changed
    for path, reason in (
        ("src", "is a folder"),
        ("missing.txt", "does not exist"),
        ("../outside", "outside the worktree"),
        (".git/config", "inside .git"),
    ):
        with pytest.raises(ToolError, match=reason):
            sandbox.delete_file(path)


def test_move_file_renames_into_new_folders_and_never_overwrites(sandbox, worktree):
    text, changed = sandbox.move_file("src/app.py", "lib/greet/app.py")
    assert changed == ["src/app.py", "lib/greet/app.py"]
    assert (worktree / "lib/greet/app.py").read_text().startswith("def greet")
    assert not (worktree / "src/app.py").exists()
    with pytest.raises(ToolError, match="already exists"):
        sandbox.move_file("README.md", "lib/greet/app.py")
    with pytest.raises(ToolError, match="outside the worktree"):
        sandbox.move_file("README.md", "../README.md")
    with pytest.raises(ToolError, match="is not a file"):
        sandbox.move_file("nothing.md", "b.md")


def test_read_only_roles_get_no_tool_that_changes_files(sandbox):
    names = {tool.name for tool in sandbox.tools(read_only=True)}
    assert not names & WRITE_TOOLS
    assert {"list_files", "read_file", "search"} <= names
    assert {tool.name for tool in sandbox.tools()} >= WRITE_TOOLS
