"""multi_edit: many replacements in one file in one call, in order, all or
none (the first that fails is the reason), answered like edit_file."""

from __future__ import annotations

import pytest

from agents.sandbox import WRITE_TOOLS, Sandbox


@pytest.fixture
def sandbox(worktree):
    (worktree / "calc.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    )
    return Sandbox(worktree, allowed_commands=[])


def multi_edit(sandbox, path, edits):
    return {t.name: t for t in sandbox.tools()}["multi_edit"].call(
        {"path": path, "edits": edits}
    )


def test_edits_apply_in_order_each_to_the_result_before(sandbox, worktree):
    outcome = multi_edit(
        sandbox,
        "calc.py",
        [
            {"old": "def add(a, b)", "new": "def plus(a, b)"},
            {"old": "return a", "new": "return x", "replace_all": True},
            # Sees the first edit's result.
            {
                "old": "def plus(a, b):\n    return x",
                "new": "def plus(x, b):\n    return x",
            },
        ],
    )
    assert not outcome.is_error, outcome.content
    assert (worktree / "calc.py").read_text() == (
        "def plus(x, b):\n    return x + b\n\n\ndef sub(a, b):\n    return x - b\n"
    )
    lines = outcome.content.splitlines()
    assert lines[0] == "edited calc.py (4 replacements)"
    assert "1\tdef plus(x, b):" in lines and "6\t    return x - b" in lines
    assert lines[-1] == "syntax check (python): no errors"
    assert outcome.record.files_changed == ("calc.py",)
    assert sandbox.files_changed == {"calc.py"}


@pytest.mark.parametrize(
    ("edits", "reason"),
    [
        (
            [{"old": "add", "new": "plus"}, {"old": "missing", "new": "x"}],
            "edit 2 of 2: old was not found in the file (after the edits before it)",
        ),
        (
            [{"old": "def add", "new": "def plus"}, {"old": "return", "new": "yield"}],
            "edit 2 of 2: old occurs 2 times",
        ),
        (
            [{"old": "add", "new": "plus"}, {"old": "add", "new": "again"}],
            "edit 2 of 2: old was not found",
        ),
    ],
)
def test_one_failing_edit_changes_nothing_and_says_which(
    sandbox, worktree, edits, reason
):
    before = (worktree / "calc.py").read_bytes()
    outcome = multi_edit(sandbox, "calc.py", edits)
    assert outcome.is_error
    assert reason in outcome.content
    assert (worktree / "calc.py").read_bytes() == before
    assert not sandbox.files_changed


def test_it_keeps_crlf_and_refuses_hostile_input(sandbox, worktree):
    (worktree / "win.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    outcome = multi_edit(
        sandbox, "win.txt", [{"old": "a\nb", "new": "A\nB"}, {"old": "c", "new": "C"}]
    )
    assert not outcome.is_error, outcome.content
    assert (worktree / "win.txt").read_bytes() == b"A\r\nB\r\nC\r\n"
    for path, edits in (
        ("../calc.py", [{"old": "a", "new": "b"}]),
        (".git/config", [{"old": "a", "new": "b"}]),
        ("calc.py", []),
        ("calc.py", [{"old": "", "new": "b"}]),
        ("calc.py", [{"old": "a", "new": "b\x00"}]),
        ("calc.py", [{"old": "a", "new": "b", "extra": 1}]),
    ):
        assert multi_edit(sandbox, path, edits).is_error, (path, edits)


def test_it_is_a_write_tool(sandbox):
    assert "multi_edit" in WRITE_TOOLS
    assert "multi_edit" not in {t.name for t in sandbox.tools(read_only=True)}
