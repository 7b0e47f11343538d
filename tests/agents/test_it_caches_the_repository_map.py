"""The repository map is cached: a file's tags by its content (a new commit
parses only the files it changed), the finished map by commit, budget and
focus; an edited worktree's map is not kept as the commit's, and a broken
cache is set aside."""

from __future__ import annotations

import sqlite3

import pytest

from agents.repo_map import build, parsing, store
from tests.agents.git_repositories import commit, finished_within, make_repository

FILES = {
    f"pkg/module_{n}.py": f"def function_{n}(x):\n    return function_0(x)\n"
    for n in range(8)
}


@pytest.fixture
def parses(monkeypatch):
    """Files parsed in this process, by content."""
    seen: list[bytes] = []
    extract = parsing.extract

    def counting(language, source):
        seen.append(source)
        return extract(language, source)

    monkeypatch.setattr(parsing, "extract", counting)
    return seen


def test_a_second_map_of_the_same_commit_parses_nothing(tmp_path, parses):
    repo, sha = make_repository(tmp_path / "repo", FILES)
    cache = tmp_path / "cache"
    first = build(repo, commit=sha, budget_tokens=500, cache_dir=cache)
    assert (first.parsed, first.cached, len(parses)) == (8, False, 8)
    again = build(repo, commit=sha, budget_tokens=500, cache_dir=cache)
    assert (again.text, again.cached, len(parses)) == (first.text, True, 8)
    # Another budget or focus is another map, from the cached tags.
    other = build(repo, commit=sha, budget_tokens=40, focus=["x.py"], cache_dir=cache)
    assert (other.cached, other.parsed, len(parses)) == (False, 0, 8)


def test_a_new_commit_parses_only_the_files_it_changed(tmp_path, parses):
    repo, first = make_repository(tmp_path / "repo", FILES)
    cache = tmp_path / "cache"
    build(repo, commit=first, budget_tokens=500, cache_dir=cache)
    parses.clear()
    second = commit(
        repo, {"pkg/module_3.py": "def renamed_3(x):\n    return function_0(x)\n"}
    )
    built = build(repo, commit=second, budget_tokens=500, cache_dir=cache)
    assert (built.files, built.parsed) == (8, 1)
    assert parses == [b"def renamed_3(x):\n    return function_0(x)\n"]
    assert "def renamed_3(x)" in built.text and "function_3" not in built.text
    # The first commit's files are still known: going back parses nothing.
    parses.clear()
    back = build(repo, commit=first, budget_tokens=400, cache_dir=cache)
    assert back.parsed == 0 and parses == []
    assert "def function_3(x)" in back.text


def test_an_edited_worktree_is_mapped_but_not_kept_as_the_commit(tmp_path):
    repo, sha = make_repository(tmp_path / "repo", FILES)
    cache = tmp_path / "cache"
    (repo / "pkg/module_5.py").write_text("def edited_5():\n    pass\n")
    edited = build(repo, commit=sha, budget_tokens=500, cache_dir=cache)
    assert "def edited_5()" in edited.text
    assert not build(repo, commit=sha, budget_tokens=500, cache_dir=cache).cached
    (repo / "pkg/module_5.py").write_text(FILES["pkg/module_5.py"])
    clean = build(repo, commit=sha, budget_tokens=500, cache_dir=cache)
    assert "def function_5(x)" in clean.text and "edited_5" not in clean.text
    assert clean.parsed == 1  # the commit's own content had not been seen
    assert build(repo, commit=sha, budget_tokens=500, cache_dir=cache).cached


def test_a_broken_tag_cache_is_set_aside(tmp_path, parses):
    repo, sha = make_repository(tmp_path / "repo", FILES)
    cache = tmp_path / "cache"
    cache.mkdir()
    broken = cache / "tags-v1.sqlite3"
    broken.write_bytes(b"this is not a database" * 100)
    built = build(repo, commit=sha, budget_tokens=500, cache_dir=cache)
    assert "def function_0(x)" in built.text
    assert (cache / "tags-v1.sqlite3.broken").exists()
    parses.clear()
    build(repo, commit=sha, budget_tokens=300, cache_dir=cache)
    assert parses == []  # the new cache works


def test_many_files_are_parsed_in_worker_processes(tmp_path, parses, monkeypatch):
    repo, sha = make_repository(tmp_path / "repo", FILES)
    monkeypatch.setattr(parsing, "PARALLEL_FROM", 2)
    monkeypatch.setattr(parsing, "CHUNK_FILES", 3)
    monkeypatch.setattr(parsing.os, "cpu_count", lambda: 2)
    in_workers = build(repo, commit=sha, budget_tokens=500, cache_dir=tmp_path / "a")
    assert in_workers.parsed == 8 and parses == []  # none in this process
    monkeypatch.setattr(parsing, "PARALLEL_FROM", 1000)
    here = build(repo, commit=sha, budget_tokens=500, cache_dir=tmp_path / "b")
    assert len(parses) == 8
    assert in_workers.text == here.text


def test_files_a_worker_fails_on_are_left_out_and_not_kept(tmp_path, monkeypatch):
    repo, sha = make_repository(tmp_path / "repo", FILES)
    monkeypatch.setattr(parsing, "PARALLEL_FROM", 2)
    monkeypatch.setattr(parsing, "CHUNK_FILES", 4)
    monkeypatch.setattr(parsing.os, "cpu_count", lambda: 2)
    real = parsing._Worker.parse
    calls = []

    def failing_once(self, files):
        calls.append(len(files))
        if len(calls) == 1:
            self.process.kill()  # as if it crashed on a file
        return real(self, files)

    monkeypatch.setattr(parsing._Worker, "parse", failing_once)
    cache = tmp_path / "cache"
    built = build(repo, commit=sha, budget_tokens=500, cache_dir=cache)
    assert built.parsed == 4  # the other chunk
    assert not build(repo, commit=sha, budget_tokens=500, cache_dir=cache).cached


def test_a_cache_that_cannot_be_written_leaves_the_map_whole(tmp_path):
    repo, sha = make_repository(tmp_path / "repo", FILES)
    nowhere = tmp_path / "a-file-not-a-folder"
    nowhere.write_text("")
    with_cache = build(repo, commit=sha, budget_tokens=500, cache_dir=tmp_path / "c")
    without = build(repo, commit=sha, budget_tokens=500, cache_dir=nowhere)
    assert without.text == with_cache.text and "def function_7(x)" in without.text


def test_workers_that_cannot_start_leave_the_files_out(tmp_path, monkeypatch):
    repo, sha = make_repository(tmp_path / "repo", FILES)
    monkeypatch.setattr(parsing, "PARALLEL_FROM", 2)
    monkeypatch.setattr(parsing, "CHUNK_FILES", 1)
    monkeypatch.setattr(parsing.os, "cpu_count", lambda: 2)

    def no_process(self):
        raise OSError("too many open files")

    monkeypatch.setattr(parsing._Worker, "__init__", no_process)
    built = finished_within(
        30, lambda: build(repo, commit=sha, budget_tokens=500, cache_dir=tmp_path)
    )
    assert (built.text, built.parsed) == ("", 0)


def test_a_busy_tag_cache_is_skipped_not_set_aside(tmp_path, monkeypatch):
    repo, first = make_repository(tmp_path / "repo", FILES)
    cache = tmp_path / "cache"
    build(repo, commit=first, budget_tokens=500, cache_dir=cache)
    second = commit(repo, {"pkg/module_2.py": "def changed_2():\n    pass\n"})
    monkeypatch.setattr(store, "BUSY_SECONDS", 0.1)
    other = sqlite3.connect(cache / "tags-v1.sqlite3")
    other.execute("BEGIN IMMEDIATE")  # another map writing, for longer
    try:
        busy = build(repo, commit=second, budget_tokens=500, cache_dir=cache)
    finally:
        other.rollback()
        other.close()
    assert "def changed_2()" in busy.text
    assert not (cache / "tags-v1.sqlite3.broken").exists()
    # Only the file whose tags could not be written is parsed again.
    assert build(repo, commit=second, budget_tokens=200, cache_dir=cache).parsed == 1
