"""search runs git grep on the task's worktree: tracked and untracked files
but not ignored ones, binary files skipped, paged with the total, patterns
checked by RE2, and neither the pattern nor the path can be a git option."""

from __future__ import annotations

import time

import pytest

from agents import search
from agents.sandbox import Sandbox
from agents.tools import ToolError
from tests.agents.git_worktrees import git_worktree


@pytest.fixture
def root(tmp_path):
    root = git_worktree(
        tmp_path / "repo",
        {
            ".gitignore": "build/\n*.log\n",
            "src/app.py": "def needle():\n    return 'Needle'\n",
            "docs/guide.md": "no match here\n",
            "data.bin": b"needle\x00\x01\x02",
        },
    )
    (root / "build").mkdir()
    (root / "build" / "out.py").write_text("needle = 'generated'\n")
    (root / "run.log").write_text("needle in a log\n")
    (root / "new.py").write_text("needle = 'untracked'\n")
    return root


@pytest.fixture
def sandbox(root):
    return Sandbox(root, allowed_commands=[])


def tool(sandbox):
    return {t.name: t for t in sandbox.tools()}["search"]


def test_it_searches_tracked_and_untracked_files_but_not_ignored_or_binary(
    sandbox,
):
    found = tool(sandbox).call({"pattern": "needle"})
    # The tracked files first, then the untracked ones.
    assert found.content.splitlines() == [
        "src/app.py:1:def needle():",
        "new.py:1:needle = 'untracked'",
    ]
    regex = tool(sandbox).call(
        {"pattern": r"^\s+return '\w+'$", "regex": True, "path": "src"}
    )
    assert regex.content == "src/app.py:2:    return 'Needle'"
    folded = sandbox.search("NEEDLE", path="src/app.py", ignore_case=True)
    assert folded.splitlines() == [
        "src/app.py:1:def needle():",
        "src/app.py:2:    return 'Needle'",
    ]


def test_it_pages_the_matches_and_says_how_many_more(sandbox, root):
    (root / "many.txt").write_text("hit\n" * 250)
    first = sandbox.search("hit", limit=100)
    assert first.count("many.txt:") == 100
    # Counting stops a page past this one, as a search of a big tree must.
    assert first.splitlines()[-1] == (
        "[matches 1-100 of more than 200; more than 100 more: ask for "
        "offset=100, or narrow the path or the pattern]"
    )
    last = sandbox.search("hit", offset=200, limit=100)
    assert last.splitlines()[0] == "many.txt:201:hit"
    assert last.splitlines()[-1] == "[matches 201-250 of 250]"
    assert (
        sandbox.search("hit", offset=300) == "(no matches from offset 300: 250 in all)"
    )


@pytest.mark.parametrize(
    "pattern",
    [
        "--open-files-in-pager=touch pwned",
        "-Otouch pwned",
        "--no-index",
        "-f/etc/passwd",
    ],
)
def test_a_pattern_is_never_an_option(sandbox, root, pattern):
    (root / "opts.txt").write_text(f"{pattern}\n")
    for regex in (False, True):
        found = tool(sandbox).call({"pattern": pattern, "regex": regex})
        assert found.content == f"opts.txt:1:{pattern}", found.content
    assert not (root / "pwned").exists()


@pytest.mark.parametrize("path", ["-O", "--open-files-in-pager=touch pwned"])
def test_a_path_is_never_an_option_nor_a_pathspec_pattern(sandbox, root, path):
    (root / path).write_text("needle in an odd name\n")
    (root / "star").mkdir()
    (root / "star" / "x.py").write_text("needle\n")
    found = sandbox.search("needle", path=path)
    assert found == f"{path}:1:needle in an odd name"
    # "*" is a file name here, not a glob matching every file.
    assert sandbox.search("needle", path="star/x.py") == "star/x.py:1:needle"
    with pytest.raises(Exception, match="does not exist"):
        sandbox.search("needle", path="*.py")
    assert not (root / "pwned").exists()


def test_it_follows_no_link_out_of_the_worktree(sandbox, root, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    (root / "link.txt").symlink_to(secret)
    (root / "linkdir").symlink_to(tmp_path)
    assert sandbox.search("TOP SECRET") == "(no matches)"


def test_invalid_and_backtracking_patterns(sandbox, root):
    (root / "evil.txt").write_text("a" * 40 + "b\n")
    refused = tool(sandbox).call({"pattern": r"(a)\1", "regex": True})
    assert refused.is_error and "invalid regular expression" in refused.content
    unbalanced = tool(sandbox).call({"pattern": "(a", "regex": True})
    assert unbalanced.is_error and "invalid regular expression" in unbalanced.content
    started = time.monotonic()
    # PCRE gives up on this one (its backtracking limit); RE2 answers.
    found = sandbox.search(r"(a+)+b", regex=True, path="evil.txt")
    assert found == "evil.txt:1:" + "a" * 40 + "b"
    assert sandbox.search(r"(a+)+$", regex=True, path="evil.txt") == "(no matches)"
    assert time.monotonic() - started < 10


def test_it_answers_without_git_grep_the_same_way(sandbox, monkeypatch):
    def no_git(*args, **kwargs):
        raise OSError("git is not installed")

    monkeypatch.setattr(search.GitStream, "__enter__", no_git)
    assert sandbox.search("needle", path="src") == "src/app.py:1:def needle():"
    assert sandbox.search("needle", path="new.py") == "new.py:1:needle = 'untracked'"


def test_the_description_states_the_regex_dialect_and_the_paging(sandbox):
    described = tool(sandbox).description
    assert "git grep" in described and "RE2 syntax" in described
    assert "offset of the next page" in described
    assert set(tool(sandbox).input_schema["properties"]) >= {"offset", "limit"}


def test_a_git_grep_past_its_time_limit_is_stopped_and_said_so(sandbox, monkeypatch):
    real = search.GitStream

    def stuck_grep(args, cwd, **kwargs):
        # A git that never answers in time, whatever the search asked.
        return real(["-c", "alias.stuck=!sleep 30", "stuck"], cwd, **kwargs)

    monkeypatch.setattr(search, "GitStream", stuck_grep)
    monkeypatch.setattr(search, "GIT_GREP_SECONDS", 0.5)
    started = time.monotonic()
    with pytest.raises(ToolError, match="search stopped at its time limit"):
        sandbox.search("needle")
    assert time.monotonic() - started < 10
