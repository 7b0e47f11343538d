"""Nothing an agent writes runs on the worker: hooks (planted where an agent
might try, and even straight into the mirror), a worktree config, and
`.gitattributes` filters are never run by Codex's commit, push or merge."""

from __future__ import annotations

import stat
from pathlib import Path

from agents.sandbox import Sandbox
from agents.tools import ToolError
from codex.repositories.models import Repository
from integrations.git import commit_all, ensure_mirror, merge_into, push
from integrations.git.runner import run_git

HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-push",
    "reference-transaction",
    "post-checkout",
    "post-merge",
    "pre-merge-commit",
    "post-rewrite",
    "pre-auto-gc",
    "fsmonitor-watchman",
)


def plant(folder, marker) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        hook = folder / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\nenv >> {marker}\n")
        hook.chmod(hook.stat().st_mode | stat.S_IEXEC)


def test_no_hook_runs_on_commit_push_or_merge(jail, git_worktree, tmp_path):
    worktree, mirror, remote = git_worktree
    marker = tmp_path / "hook-ran"
    # The ways an agent has: its shell (the mirror is not there), the file
    # tools (refused), a hooks folder in the worktree with a config naming it.
    jail.run(
        [
            "bash",
            "-c",
            f"mkdir -p {mirror}/hooks && echo x > {mirror}/hooks/pre-commit; "
            "mkdir -p .githooks; printf '#!/bin/sh\\ntouch /tmp/x\\n' > "
            ".githooks/pre-commit; chmod +x .githooks/pre-commit",
        ]
    )
    sandbox = Sandbox(worktree, jail=jail)
    for path in (".git/hooks/pre-commit", ".git", ".git/config"):
        try:
            sandbox.write_file(path, "#!/bin/sh\ntouch /tmp/x\n")
        except ToolError:
            pass
        else:
            raise AssertionError(f"write_file wrote {path}")
    # And then the worst case, as if the mirror had been reached after all:
    # hooks everywhere git looks, and settings that name programs.
    plant(mirror / "hooks", marker)
    plant(remote / "hooks", marker)
    gitdir = run_git(["rev-parse", "--absolute-git-dir"], worktree).strip()
    plant(Path(gitdir) / "hooks", marker)
    run_git(["config", "core.hooksPath", str(worktree / ".githooks")], mirror)
    run_git(["config", "core.fsmonitor", f"touch {marker}"], mirror)
    (worktree / ".gitattributes").write_text("* filter=evil diff=evil\n")
    run_git(["config", "filter.evil.clean", f"sh -c 'touch {marker}; cat'"], mirror)

    run_git(["config", "include.path", str(worktree / "evil.cfg")], mirror)
    (worktree / "evil.cfg").write_text(f"[core]\n\tfsmonitor = touch {marker}\n")
    # The next step opens the repository as every step does.
    ensure_mirror(Repository.objects.get(url=f"file://{remote}"), f"file://{remote}")

    (worktree / "feature.py").write_text("print('hi')\n")
    sha = commit_all(worktree, "Add feature", "T-1")
    assert sha
    push(worktree, "codex/T-1")
    run_git(["diff", "HEAD~1", "HEAD"], worktree)
    run_git(["status", "--porcelain"], worktree)
    merged = merge_into(
        remote, base="main", head=sha, method="merge", message="Merge T-1"
    )
    assert merged
    assert not marker.exists(), marker.read_text()[:500]


def test_settings_that_run_programs_are_removed_from_the_mirror(git_worktree):
    _worktree, mirror, remote = git_worktree
    for key, value in (
        ("filter.evil.clean", "touch /tmp/x"),
        ("include.path", "/tmp/evil.cfg"),
        ("core.sshCommand", "touch /tmp/x"),
        ("credential.helper", "!touch /tmp/x"),
        ("url.https://evil.example/.insteadOf", "https://github.com/"),
        ("extensions.worktreeConfig", "true"),
    ):
        run_git(["config", key, value], mirror)
    ensure_mirror(Repository.objects.get(url=f"file://{remote}"), f"file://{remote}")
    left = run_git(["config", "--local", "--list", "--name-only"], mirror).split()
    assert sorted(left) == sorted(
        {
            "core.repositoryformatversion",
            "core.filemode",
            "core.bare",
            "remote.origin.url",
            "remote.origin.fetch",
        }
        & set(left)
    )
    assert "remote.origin.url" in left
