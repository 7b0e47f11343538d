"""The installed environment is cached per repository and key files: the
second task on the same lock file does not install again (it gets a copy),
a changed lock file installs again, and only a setup on a commit of the
default branch fills the cache."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from agents.ecosystems import prepare_environment
from agents.ecosystems.cache import SetupCache
from agents.ecosystems.environment import environment_for
from integrations.git.runner import run_git
from integrations.jail import Jail
from tests.agents.ecosystems.projects import UNITTEST_PROJECT, node_project

pytestmark = pytest.mark.django_db

# A setup whose every run leaves a different mark: a copy keeps the first.
STAMP = "mkdir -p .deps && cat /proc/sys/kernel/random/uuid > .deps/id"


@pytest.fixture
def setups(monkeypatch):
    """The setup commands that ran in a jail, in order."""
    ran: list[str] = []
    real_run = Jail.run

    def counting(self, argv, **kwargs):
        text = " ".join(argv)
        for marker in ("npm ci", STAMP):
            if marker in text:
                ran.append(marker)
        return real_run(self, argv, **kwargs)

    monkeypatch.setattr(Jail, "run", counting)
    return ran


def ready(project, jailed, task_id: str, base: str = "main"):
    worktree = project.worktree(task_id, base)
    jail, not_ready = prepare_environment(project.repository, jailed(worktree))
    assert not_ready == ""
    return worktree, jail


def test_the_second_task_on_the_same_lock_file_does_not_install(remote, jailed, setups):
    if not shutil.which("npm"):
        pytest.skip("npm is not installed on this machine")
    project = remote(node_project())
    first, _ = ready(project, jailed, "T-1")
    assert setups == ["npm ci"]
    second, jail = ready(project, jailed, "T-2")
    assert setups == ["npm ci"], "the second task installed again"
    assert (second / "node_modules" / "helper").is_symlink()
    # The copy works: the tests run with it, and it never reaches a commit.
    result = jail.run(["npm", "test"])
    assert result.exit_code == 0, result.output
    assert run_git(["status", "--porcelain"], second) == ""
    # A later step of the same task neither installs nor copies again.
    ready(project, jailed, "T-2")
    assert setups == ["npm ci"]


def test_a_copy_is_the_first_setups_result_not_a_new_run(remote, jailed, setups):
    project = remote(UNITTEST_PROJECT, setup_command=STAMP)
    first, _ = ready(project, jailed, "T-1")
    second, _ = ready(project, jailed, "T-2")
    assert setups == [STAMP]
    assert (second / ".deps" / "id").read_text() == (first / ".deps" / "id").read_text()
    # The copy is the task's own: writing in it changes nothing elsewhere.
    (second / ".deps" / "id").write_text("tampered\n")
    third, _ = ready(project, jailed, "T-3")
    assert (third / ".deps" / "id").read_text() == (first / ".deps" / "id").read_text()


def test_a_changed_lock_file_installs_again(remote, jailed, setups):
    project = remote(UNITTEST_PROJECT, setup_command=STAMP)
    ready(project, jailed, "T-1")
    project.change({"requirements.txt": "# still nothing, but changed\n"})
    changed, _ = ready(project, jailed, "T-2")
    assert setups == [STAMP, STAMP]
    ready(project, jailed, "T-3")
    assert setups == [STAMP, STAMP]
    assert (changed / ".deps" / "id").exists()


def test_a_setup_on_a_branch_does_not_fill_the_cache(remote, jailed, setups):
    project = remote(UNITTEST_PROJECT, setup_command=STAMP)
    # A branch whose lock file differs from main's: its setup is its own.
    project.change({"requirements.txt": "# the branch's\n"}, branch="feature")
    run_git(["reset", "--hard", "--quiet", "HEAD~1"], project.seed)
    ready(project, jailed, "T-1", base="feature")
    ready(project, jailed, "T-2", base="feature")
    assert setups == [STAMP, STAMP]


def test_unjailed_commands_are_never_cached(remote, tmp_path, settings):
    project = remote(UNITTEST_PROJECT, setup_command=STAMP)
    worktree = project.worktree("T-1")
    settings.CODEX_SANDBOX = "none"
    jail = Jail.for_worktree(worktree)
    environment = environment_for(project.repository, worktree)
    assert SetupCache.for_environment(project.repository, jail, environment) is None


def test_only_the_most_recently_used_entries_are_kept(tmp_path, settings):
    settings.CODEX_SETUP_CACHE_KEEP = 2
    folder = tmp_path / "cache" / "7"
    for key in ("old", "older", "newest"):
        (folder / key).mkdir(parents=True)
        (folder / key / "entries.json").write_text(json.dumps([]))
    os.utime(folder / "old", (100, 100))
    os.utime(folder / "older", (50, 50))
    SetupCache(folder, "newest", "main").prune()
    assert sorted(p.name for p in folder.iterdir()) == ["newest", "old"]


def test_another_build_of_a_toolchain_installs_again(
    remote, jailed, setups, settings, tmp_path
):
    tools = tmp_path / "tools"
    tools.mkdir()
    node = tools / "node"
    node.write_text("#!/bin/sh\necho v20\n")
    node.chmod(0o755)
    settings.CODEX_SANDBOX_READONLY_PATHS = [
        *settings.CODEX_SANDBOX_READONLY_PATHS,
        str(tools),
    ]
    settings.CODEX_SANDBOX_PATH = f"{tools}:{settings.CODEX_SANDBOX_PATH}"
    project = remote(UNITTEST_PROJECT, setup_command=STAMP)
    ready(project, jailed, "T-1")
    ready(project, jailed, "T-2")
    assert setups == [STAMP]
    # The same PATH, another node behind it: what was installed may not fit.
    node.write_text("#!/bin/sh\necho v22.1\n")
    ready(project, jailed, "T-3")
    assert setups == [STAMP, STAMP]
