"""Every write and edit answers with a numbered snippet of the file around
the change and, for the languages agents.syntax parses, a syntax check of
the new file; a broken file is kept as written."""

from __future__ import annotations

import pytest

from agents.sandbox import Sandbox

MODULE = "".join(f"VALUE_{n} = {n}\n" for n in range(1, 41))


@pytest.fixture
def sandbox(worktree):
    (worktree / "mod.py").write_text(MODULE)
    return Sandbox(worktree, allowed_commands=[])


def call(sandbox, name, arguments):
    outcome = {t.name: t for t in sandbox.tools()}[name].call(arguments)
    assert not outcome.is_error, outcome.content
    return outcome.content


def test_an_edit_answers_the_lines_around_it_numbered(sandbox):
    answer = call(
        sandbox,
        "edit_file",
        {
            "path": "mod.py",
            "old": "VALUE_20 = 20\n",
            "new": "VALUE_20 = 200\nNEW = 1\n",
        },
    )
    assert answer.splitlines() == [
        "edited mod.py",
        "17\tVALUE_17 = 17",
        "18\tVALUE_18 = 18",
        "19\tVALUE_19 = 19",
        "20\tVALUE_20 = 200",
        "21\tNEW = 1",
        "22\tVALUE_21 = 21",
        "23\tVALUE_22 = 22",
        "24\tVALUE_23 = 23",
        "syntax check (python): no errors",
    ]


def test_a_rewrite_shows_each_changed_region_and_a_new_file_its_start(sandbox):
    changed = MODULE.replace("VALUE_3 = 3", "VALUE_3 = 'three'").replace(
        "VALUE_35 = 35\n", ""
    )
    answer = call(sandbox, "write_file", {"path": "mod.py", "content": changed})
    lines = answer.splitlines()
    assert lines[0] == f"wrote {len(changed)} bytes to mod.py"
    assert "3\tVALUE_3 = 'three'" in lines
    assert "..." in lines
    assert "34\tVALUE_34 = 34" in lines and "35\tVALUE_36 = 36" in lines
    assert "20\tVALUE_20 = 20" not in lines
    fresh = call(sandbox, "write_file", {"path": "notes.txt", "content": "one\ntwo\n"})
    assert fresh.splitlines() == ["wrote 8 bytes to notes.txt", "1\tone", "2\ttwo"]


@pytest.mark.parametrize(
    ("path", "content", "line", "shown"),
    [
        ("broken.py", "def f(:\n    return 1\n", 1, "def f(:"),
        ("indent.py", "def f():\n    x = 1\n      y = 2\n", 3, "      y = 2"),
        ("app.js", "const a = 1;\nfunction f( {\n", 2, "function f( {"),
        ("app.ts", "let ok = 1;\nlet x: number = ;\n", 2, "let x: number = ;"),
        ("main.go", "package main\nfunc main() {\n\tx := \n}\n", 3, "\tx :="),
        ("lib.rs", "fn main() {\n    let x = ;\n}\n", 2, "    let x = ;"),
    ],
)
def test_a_syntax_error_is_reported_and_the_file_kept(
    sandbox, worktree, path, content, line, shown
):
    answer = call(sandbox, "write_file", {"path": path, "content": content})
    assert "problem" in answer and "the file is kept as written" in answer
    assert f"line {line}, column " in answer
    assert f"\n    {shown}" in answer
    assert (worktree / path).read_text() == content


def test_an_edit_that_breaks_a_file_says_where(sandbox, worktree):
    answer = call(
        sandbox,
        "edit_file",
        {"path": "mod.py", "old": "VALUE_9 = 9", "new": "VALUE_9 = (9"},
    )
    assert "syntax check (python): 1 problem" in answer
    assert "line 9, column" in answer
    assert "VALUE_9 = (9" in (worktree / "mod.py").read_text()


def test_files_of_other_languages_get_no_check(sandbox):
    answer = call(sandbox, "write_file", {"path": "notes.md", "content": "# (\n"})
    assert "syntax check" not in answer
