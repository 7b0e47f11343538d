"""The tools stay inside the worktree and keep secrets out of commands."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from agents.sandbox import Sandbox
from agents.tools import ToolError
from integrations.jail import CA_BUNDLE_VARIABLES, Jail, Limits

PYTHON_DIR = str(Path(sys.executable).parent)


@pytest.fixture
def sandbox(worktree, settings):
    settings.CODEX_SANDBOX_PATH = f"{PYTHON_DIR}:{os.defpath}"
    jail = Jail.for_worktree(
        worktree, limits=Limits(wall_seconds=2, cpu_seconds=2, output_chars=2000)
    )
    return Sandbox(
        worktree, jail=jail, allowed_commands=["python"], max_write_bytes=10_000
    )


def tool(sandbox, name):
    return {t.name: t for t in sandbox.tools()}[name]


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "src/../../outside.txt", "/etc/passwd", "~/x", "a\x00b"],
)
@pytest.mark.parametrize("tool_name", ["read_file", "write_file", "list_files"])
def test_paths_outside_the_worktree_are_refused(sandbox, worktree, path, tool_name):
    outcome = tool(sandbox, tool_name).call({"path": path, "content": "x"})
    assert outcome.is_error
    assert not outcome.record.success
    assert outcome.record.error
    assert not (worktree.parent / "outside.txt").exists()


def test_symlinks_pointing_out_are_refused(sandbox, worktree, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    (worktree / "link.txt").symlink_to(secret)
    (worktree / "linkdir").symlink_to(tmp_path)

    for name, arguments in [
        ("read_file", {"path": "link.txt"}),
        ("read_file", {"path": "linkdir/secret.txt"}),
        ("write_file", {"path": "link.txt", "content": "overwritten"}),
        ("write_file", {"path": "linkdir/new.txt", "content": "x"}),
        ("edit_file", {"path": "link.txt", "old": "TOP", "new": "NO"}),
        ("list_files", {"path": "linkdir"}),
    ]:
        outcome = tool(sandbox, name).call(arguments)
        assert outcome.is_error, (name, arguments)
        assert "outside the worktree" in outcome.content
    assert secret.read_text() == "TOP SECRET"
    assert not (tmp_path / "new.txt").exists()
    search = tool(sandbox, "search").call({"pattern": "TOP SECRET"})
    assert search.content == "(no matches)"


def test_a_symlink_inside_the_worktree_is_fine(sandbox, worktree):
    (worktree / "alias.py").symlink_to(worktree / "src" / "app.py")
    assert "def greet" in tool(sandbox, "read_file").call({"path": "alias.py"}).content


def test_writes_into_git_are_refused(sandbox, worktree):
    (worktree / ".git").mkdir()
    outcome = tool(sandbox, "write_file").call(
        {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nenv > /tmp/x\n"}
    )
    assert outcome.is_error
    assert not (worktree / ".git" / "hooks").exists()


def test_huge_writes_and_nul_content_are_refused(sandbox, worktree):
    big = tool(sandbox, "write_file").call({"path": "big.txt", "content": "x" * 10_001})
    nul = tool(sandbox, "write_file").call({"path": "nul.txt", "content": "a\x00b"})
    assert big.is_error and "limit" in big.content
    assert nul.is_error and "NUL" in nul.content
    assert not (worktree / "big.txt").exists()
    assert not (worktree / "nul.txt").exists()


def test_read_write_edit_list_search(sandbox, worktree):
    wrote = tool(sandbox, "write_file").call(
        {"path": "pkg/mod.py", "content": "A = 1\nB = 2\nC = 3\n"}
    )
    assert not wrote.is_error
    assert wrote.record.files_changed == ("pkg/mod.py",)

    read = tool(sandbox, "read_file").call(
        {"path": "pkg/mod.py", "start_line": 2, "end_line": 3}
    )
    assert read.content.splitlines()[1:] == ["2\tB = 2", "3\tC = 3"]

    edit = tool(sandbox, "edit_file").call(
        {"path": "pkg/mod.py", "old": "B = 2", "new": "B = 20"}
    )
    assert not edit.is_error
    assert (worktree / "pkg/mod.py").read_text() == "A = 1\nB = 20\nC = 3\n"

    ambiguous = tool(sandbox, "edit_file").call(
        {"path": "pkg/mod.py", "old": " = ", "new": "="}
    )
    assert ambiguous.is_error and "3 times" in ambiguous.content
    missing = tool(sandbox, "edit_file").call(
        {"path": "pkg/mod.py", "old": "Z = 9", "new": "x"}
    )
    assert missing.is_error and "not found" in missing.content

    listing = tool(sandbox, "list_files").call({}).content.splitlines()
    assert listing == ["README.md", "pkg/mod.py", "src/app.py"]

    found = tool(sandbox, "search").call({"pattern": r"B = \d+", "regex": True})
    assert found.content == "pkg/mod.py:2:B = 20"
    plain = tool(sandbox, "search").call({"pattern": "HELLO", "ignore_case": True})
    assert plain.content.splitlines() == [
        "README.md:3:Hello world.",
        "src/app.py:2:    return 'hello'",
    ]
    assert sandbox.files_changed == {"pkg/mod.py"}


def test_search_is_capped(sandbox, worktree):
    (worktree / "many.txt").write_text("needle\n" * 500)
    found = sandbox.search("needle", limit=10)
    assert found.count("many.txt:") == 10
    assert "matches 1-10 of more than 110; more than 100 more: ask for offset=10" in (
        found
    )


def test_command_environment_holds_no_secret(sandbox, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret")
    monkeypatch.setenv("CODEX_FAKE_SECRET", "hunter2")
    outcome = tool(sandbox, "run_command").call(
        {
            "command": [
                "python",
                "-c",
                "import os, json; print(json.dumps(dict(os.environ)))",
            ]
        }
    )
    assert not outcome.is_error, outcome.content
    assert "hunter2" not in outcome.content
    assert "sk-ant" not in outcome.content
    env = json.loads(outcome.content.split("\n", 1)[1])  # after "exit code 0"
    assert set(env) <= {
        *("PATH", "HOME", "LANG", "LC_CTYPE", "TMPDIR", "USER", "CI", "PWD"),
        "PYTHONDONTWRITEBYTECODE",
        # The machine's CA bundle for pip, Node and the rest (a path, no secret).
        *CA_BUNDLE_VARIABLES,
    }
    assert env["HOME"] != os.environ.get("HOME")


def test_only_allowed_programs_run(sandbox):
    for command in (["sh", "-c", "echo hi"], ["/usr/bin/python3", "-V"], []):
        outcome = tool(sandbox, "run_command").call({"command": command})
        assert outcome.is_error
    refused = tool(sandbox, "run_command").call({"command": ["bash", "-c", "id"]})
    assert "not an allowed command" in refused.content


def test_a_command_that_never_ends_is_killed(sandbox):
    started = time.monotonic()
    result = sandbox.run_command(
        ["python", "-c", "import time\nprint('start', flush=True)\ntime.sleep(60)"]
    )
    assert result.timed_out
    assert result.exit_code is None
    assert "start" in result.output
    assert time.monotonic() - started < 10


def test_a_command_that_prints_a_lot_is_capped(sandbox):
    result = sandbox.run_command(
        ["python", "-c", "import sys\nsys.stdout.write('x' * 3_000_000)"]
    )
    assert result.exit_code == 0
    assert result.total_bytes == 3_000_000
    assert len(result.output) < 2200
    assert "output cut" in result.output


def test_failing_command_is_an_error_with_its_output(sandbox):
    outcome = tool(sandbox, "run_command").call(
        {"command": ["python", "-c", "raise SystemExit('boom')"]}
    )
    assert outcome.is_error
    assert "exit code 1" in outcome.content
    assert "boom" in outcome.content


def test_command_cwd_is_confined(sandbox):
    outcome = tool(sandbox, "run_command").call(
        {"command": ["python", "-V"], "cwd": "../"}
    )
    assert outcome.is_error
    with pytest.raises(ToolError):
        sandbox.resolve("../x")


def test_an_operators_extra_environment_reaches_commands_but_not_path(
    worktree, settings
):
    settings.CODEX_SANDBOX_ENV = {
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PATH": "/evil",
    }
    sandbox = Sandbox(worktree, allowed_commands={"env"})
    env = sandbox.jail.environment()
    assert env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert env["PATH"] != "/evil"
    result = sandbox.run_command("env")
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1" in result.output
    assert "PATH=/evil" not in result.output


def test_search_cannot_backtrack_catastrophically(sandbox, worktree):
    """RE2: `(a+)+$` against 40 a's and a b takes Python's `re` hours; here the
    search answers (a thread guards the suite against a hang)."""
    import threading

    (worktree / "evil.txt").write_text("a" * 40 + "b\n")
    answers: list[str] = []
    worker = threading.Thread(
        target=lambda: answers.append(
            sandbox.search(r"(a+)+$", regex=True)
            + sandbox.search(r"(a+)+b", regex=True)
        ),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=30)
    assert answers, "the search did not finish"
    assert answers[0] == "(no matches)evil.txt:1:" + "a" * 40 + "b"
    # Backreferences need backtracking: RE2 refuses them with a tool error.
    refused = tool(sandbox, "search").call({"pattern": r"(a)\1", "regex": True})
    assert refused.is_error and "invalid regular expression" in refused.content


@pytest.mark.parametrize("timeout", ["nan", "NaN", float("nan"), float("inf"), -1, 0])
def test_a_timeout_that_is_no_finite_positive_number_is_a_tool_error(sandbox, timeout):
    outcome = tool(sandbox, "run_command").call(
        {"command": ["python", "-c", "print('ran')"], "timeout": timeout}
    )
    assert outcome.is_error and "ran" not in outcome.content
