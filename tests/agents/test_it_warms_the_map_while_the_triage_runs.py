"""The planner's repository map is built in the background while the product
manager's run works (agents.repo_map.prompt.warm_in_background), so that on a
large repository the planner reads it from the cache."""

from __future__ import annotations

from agents.repo_map import build, parsing
from agents.repo_map.prompt import warm_in_background
from agents.roles.base import RoleContext, Step
from tests.agents.git_repositories import make_repository

FILES = {f"pkg/m{n}.py": f"def f{n}(x):\n    return f0(x)\n" for n in range(6)}


class Task:
    task_id = "FEAT-20261128-warm01"


def test_the_map_is_in_the_cache_after_the_warm_up(tmp_path, settings, monkeypatch):
    settings.CODEX_AGENT_REPO_MAP_TOKENS = 700
    settings.CODEX_REPO_MAP_CACHE_DIR = str(tmp_path / "cache")
    repo, sha = make_repository(tmp_path / "repo", FILES)
    step = Step(
        task=Task(), forge=None, branch="b", worktree=repo, context=RoleContext(None)
    )

    thread = warm_in_background(step)
    thread.join(timeout=60)

    parsed = []
    monkeypatch.setattr(parsing, "extract", lambda *a: parsed.append(a))
    again = build(repo, commit=sha, budget_tokens=700, cache_dir=tmp_path / "cache")
    assert again.cached and parsed == []


def test_no_warm_up_when_the_map_is_off(tmp_path, settings):
    settings.CODEX_AGENT_REPO_MAP_TOKENS = 0
    repo, _ = make_repository(tmp_path / "repo", FILES)
    step = Step(
        task=Task(), forge=None, branch="b", worktree=repo, context=RoleContext(None)
    )
    assert warm_in_background(step) is None
