"""The base commit's checks run after the repository's setup command with
its network hosts, as on the task's branch: a setup that needs the registry
would otherwise fail there and the baseline be lost."""

from __future__ import annotations

from agents import baseline
from agents.demo import create_bare_repository, git
from agents.ecosystems import environment
from codex.repositories.models import Repository


def test_the_base_commit_is_set_up_with_the_repositorys_hosts(tmp_path, monkeypatch):
    bare = create_bare_repository(tmp_path / "remote", seed={"a.py": "x = 1\n"})
    work = tmp_path / "work"
    git("clone", "--quiet", str(bare), str(work), cwd=tmp_path)
    sha = git("rev-parse", "HEAD", cwd=work).strip()
    calls = []

    def ensure_setup(jail, command, hosts=None, **proxy):
        calls.append((command, hosts))
        return "stop here"  # what happens after is not this test's

    monkeypatch.setattr(environment, "ensure_setup", lambda *a, **k: ensure_setup(*a))
    repository = Repository(
        url=f"file://{bare}",
        setup_command="pip install -r requirements.txt",
        setup_network_hosts="pypi.org files.pythonhosted.org",
    )

    assert baseline._run_on(work, repository, sha) is None
    assert calls == [
        ("pip install -r requirements.txt", ["pypi.org", "files.pythonhosted.org"])
    ]
