"""list_files has no silent cap: it is paged (offset, limit), says how many
files there are and where the next page starts, and lists regular files only
(a worktree's .git file and dependency folders left out)."""

from __future__ import annotations

import pytest

from agents.sandbox import Sandbox
from tests.agents.git_worktrees import git_worktree


@pytest.fixture
def sandbox(worktree):
    for number in range(1, 1201):
        folder = worktree / "pkg" / f"m{number // 100:02}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{number:04}.py").write_text("")
    return Sandbox(worktree, allowed_commands=[])


def test_a_listing_is_paged_with_its_total(sandbox):
    listing = {t.name: t for t in sandbox.tools()}["list_files"]
    first = listing.call({}).content.splitlines()
    assert len(first) == 501
    assert first[0] == "README.md"
    assert first[-1] == (
        "[files 1-500 of 1202; more: ask for offset=500, or list a subfolder]"
    )
    seen = first[:-1]
    offset = 500
    while True:
        page = listing.call({"offset": offset, "limit": 500}).content.splitlines()
        seen += page[:-1]
        if "more: ask for offset=" not in page[-1]:
            assert page[-1] == f"[files {offset + 1}-1202 of 1202]"
            break
        offset += 500
    assert len(seen) == len(set(seen)) == 1202
    assert seen[-1] == "src/app.py"


def test_a_page_size_and_a_subfolder(sandbox):
    page = sandbox.list_files("pkg/m03", offset=10, limit=5).splitlines()
    assert page == [
        "pkg/m03/f0310.py",
        "pkg/m03/f0311.py",
        "pkg/m03/f0312.py",
        "pkg/m03/f0313.py",
        "pkg/m03/f0314.py",
        "[files 11-15 of 100; more: ask for offset=15, or list a subfolder]",
    ]
    assert sandbox.list_files("pkg/m03", offset=100) == (
        "(no files from offset 100: 100 in all)"
    )


def test_a_worktrees_git_file_is_not_listed(tmp_path):
    root = git_worktree(tmp_path / "repo", {"a.py": "x = 1\n"})
    assert (root / ".git").is_file()
    assert Sandbox(root, allowed_commands=[]).list_files() == "a.py"
