"""read_blobs: files at a commit read with one `git cat-file --batch`, and
only what it read exactly answered (agents/people.py reads the rules files
with it; what it leaves out is read file by file)."""

from __future__ import annotations

import subprocess

import pytest

from codex.core.errors import ClassifiedFailure
from integrations.git import read_blobs, run_git
from tests.integrations.git.helpers import IDENTITY, clone, commit_file


@pytest.fixture
def repo(remote, tmp_path):
    work = clone(remote, tmp_path / "work", "main")
    (work / "docs").mkdir()
    (work / "docs" / "a b.md").write_text("spaced\n")
    (work / "rules.md").write_text("first line\nnon-ASCII: é ✓\n\n")
    (work / "empty.md").write_text("")
    run_git(["add", "--all"], work)
    run_git(["commit", "--quiet", "-m", "files"], work, IDENTITY)
    return work


def _head(repo) -> str:
    return run_git(["rev-parse", "HEAD"], repo).strip()


def test_files_and_missing_paths_with_one_git(repo, monkeypatch):
    head = _head(repo)
    started = []
    real = subprocess.Popen

    def popen(args, *rest, **kwargs):
        started.append(args)
        return real(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    found = read_blobs(
        repo,
        head,
        ["rules.md", "missing.md", "docs/a b.md", "README.md", "empty.md"],
    )
    assert found == {
        "rules.md": "first line\nnon-ASCII: é ✓\n\n",
        "missing.md": None,
        "docs/a b.md": "spaced\n",
        "README.md": "hello\n",
        "empty.md": "",
    }
    assert len(started) == 1 and "cat-file" in started[0]


def test_what_is_no_file_or_no_utf8_is_left_to_the_caller(repo):
    # A folder's listing holds binary ids: no UTF-8, so nothing is answered.
    assert read_blobs(repo, _head(repo), ["docs", "rules.md"]) == {}
    (repo / "latin.md").write_bytes(b"caf\xe9\n")
    commit_file(repo, "other.md", "x\n", "more")
    run_git(["add", "latin.md"], repo)
    run_git(["commit", "--quiet", "-m", "latin-1"], repo, IDENTITY)
    # Sizes are bytes; a text with replaced bytes has lost them: nothing.
    assert read_blobs(repo, _head(repo), ["other.md", "latin.md"]) == {}


def test_a_path_with_a_line_break_is_not_asked_and_nothing_asked_is_no_git(repo):
    assert read_blobs(repo, _head(repo), ["a\nb"]) == {}
    assert read_blobs(repo, _head(repo), []) == {}


def test_a_git_failure_raises(tmp_path):
    with pytest.raises(ClassifiedFailure):
        read_blobs(tmp_path, "0" * 40, ["rules.md"])
