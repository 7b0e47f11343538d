"""The benchmark's generated repository (bench/large_repository.py): exactly
the files asked for, in the planned mix, calling each other with a few modules
called from many files; written to git once, then kept and put back clean."""

from __future__ import annotations

import re
import subprocess
from collections import Counter

from bench.large_repository import SHARES, contents, layout, repository


def test_it_makes_exactly_the_files_asked_for_in_the_planned_mix():
    files = dict(contents(1000))
    assert len(files) == 1000
    by_suffix = Counter(path.rsplit(".", 1)[-1] for path in files)
    # Two of the text files' share are a vendored Go file and a minified
    # bundle, which a map must skip.
    for kind, share in SHARES.items():
        assert by_suffix[kind] == int(1000 * share) + (kind in ("go", "js"))
    assert by_suffix["md"] + by_suffix["json"] + by_suffix["txt"] == 238
    assert max(path.count("/") for path in files) == 4  # nested packages
    # The same on every machine.
    assert dict(contents(1000)) == files


def test_a_few_modules_are_called_from_many_files_most_from_few():
    modules, _ = layout(2000)
    called = Counter()
    for path, data in contents(2000):
        if path.endswith(".py"):
            called.update(set(re.findall(rb"from (\S+) import", data)))
    counts = sorted(called.values(), reverse=True)
    python = len(modules["py"])
    assert counts[0] > python / 10
    assert counts[len(counts) // 2] <= 3


def test_it_is_written_once_then_kept_and_put_back_clean(tmp_path):
    root = tmp_path / "repositories"
    worktree = repository(300, root)
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=worktree, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(tracked) == 300
    head = (root / "files-300-v1.head").read_text().strip()
    (worktree / tracked[0]).write_text("changed\n")
    (worktree / "stray.txt").write_text("left behind\n")
    assert repository(300, root) == worktree
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=worktree, capture_output=True, text=True
    )
    assert status.stdout == ""
    log = subprocess.run(
        ["git", "log", "--format=%H"], cwd=worktree, capture_output=True, text=True
    )
    assert log.stdout.split()[0] == head and len(log.stdout.split()) == 2


def test_a_longer_history_is_kept_bare_with_a_few_files_per_commit(tmp_path):
    root = tmp_path / "repositories"
    forge = repository(300, root, commits=40, bare=True)
    assert forge.name == "files-300-commits-40-v1.git"

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=forge, capture_output=True, text=True, check=True
        ).stdout

    assert git("rev-parse", "--is-bare-repository").strip() == "true"
    assert git("rev-list", "--count", "main").strip() == "40"
    assert len(git("ls-tree", "-r", "--name-only", "main").splitlines()) == 300
    # Every later commit changes one to three files, by adding a line.
    for sha in git("rev-list", "-n", "5", "main").split():
        stat = git("show", "--numstat", "--format=", sha).splitlines()
        assert 1 <= len(stat) <= 3
        assert all(line.split()[:2] == ["1", "0"] for line in stat)
    head = (root / "files-300-commits-40-v1-bare.head").read_text().strip()
    git("update-ref", "refs/heads/main", "main~3")
    assert repository(300, root, commits=40, bare=True) == forge
    assert git("rev-parse", "main").strip() == head
