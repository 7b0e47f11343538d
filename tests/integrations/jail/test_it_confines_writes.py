"""The worktree's files are the only writable place: absolute paths, symlinks
and hard links made inside reach nothing outside, and the `.git` of the
worktree cannot be read, written or replaced."""

from __future__ import annotations

from agents.sandbox import Sandbox


def test_writes_outside_the_worktree_reach_nothing(jail, git_worktree, tmp_path):
    worktree, mirror, _remote = git_worktree
    outside = tmp_path / "outside.txt"
    outside.write_text("untouched")
    (worktree / "link-out").symlink_to(outside)
    (worktree / "dir-out").symlink_to(tmp_path)
    script = (
        f"echo pwned > {outside}; echo pwned > link-out; echo pwned > dir-out/new; "
        f"echo pwned > {mirror}/hooks/pre-commit; mkdir -p {tmp_path}/made; "
        "echo pwned > /tmp/scratch; cat /tmp/scratch; true"
    )
    result = jail.run(["bash", "-c", script])
    assert outside.read_text() == "untouched"
    assert not (tmp_path / "new").exists()
    assert not (tmp_path / "made").exists()
    assert not (mirror / "hooks" / "pre-commit").exists()
    # /tmp is the jail's own: writable, and gone afterwards.
    assert "pwned" in result.output


def test_the_git_folder_cannot_be_read_written_or_replaced(jail, git_worktree):
    worktree, mirror, _remote = git_worktree
    pointer = (worktree / ".git").read_text()
    script = (
        "cat .git; echo 'gitdir: /tmp/evil' > .git; rm -f .git; mv .git g; "
        "mkdir .git; echo '[core] fsmonitor = touch /tmp/x' > .git/config; "
        "ln -s /tmp .git; git status; true"
    )
    result = jail.run(["bash", "-c", script])
    assert (worktree / ".git").read_text() == pointer
    assert str(mirror) not in result.output
    assert not (worktree / "g").exists()


def test_a_hard_link_made_inside_cannot_carry_a_write(jail, git_worktree):
    worktree, _mirror, _remote = git_worktree
    result = jail.run(
        ["bash", "-c", "ln /etc/passwd pw; ln /usr/bin/env e; ln README.md twin"]
    )
    assert not (worktree / "pw").exists() and not (worktree / "e").exists()
    assert (worktree / "twin").stat().st_ino == (worktree / "README.md").stat().st_ino
    assert result.output.count("Invalid cross-device link") == 2
    # The file tools replace a file: its twin keeps what it had.
    sandbox = Sandbox(worktree, jail=jail)
    sandbox.write_file("twin", "changed\n")
    sandbox.edit_file("twin", "changed", "edited")
    assert (worktree / "README.md").read_text() == "hello\n"
    assert (worktree / "twin").read_text() == "edited\n"
