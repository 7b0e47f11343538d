"""The repository's checks on the base branch: what already failed before
the change, so that QA judges only what the change broke.

Once per task and base commit (the merge base of the task's branch and the
default branch), the repository's test, lint and type-check commands run on
a detached worktree of that commit, in the jail, after the repository's
setup (its own or the detected one, agents.ecosystems), exactly as QA runs
them on the branch. The outcome (each
check's status and failing test names) is cached per repository, base
commit and commands, in Django's cache (shared by the workers), so later
cycles and other tasks on the same base do not run them again.

A failing test that also fails on the base, or a check failing on the base
the same way without named failures (an environment problem no developer
can fix), is pre-existing: reported, never a reason to send the change back
(agents.check_runs).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.core.cache import cache

from agents import check_runs
from agents.ecosystems import prepare_environment
from agents.sandbox import Sandbox
from codex.core.errors import ClassifiedFailure
from integrations.git import run_git
from integrations.jail import Jail, JailUnavailable

if TYPE_CHECKING:
    from codex.repositories.models import Repository

logger = logging.getLogger(__name__)

CACHE_SECONDS = 14 * 24 * 3600


def base_commit(worktree: Path, repository: Repository) -> str:
    """The commit the task's branch started from on the default branch."""
    base = f"origin/{repository.default_branch}"
    return run_git(["merge-base", "HEAD", base], worktree).strip()


def cache_key(repository: Repository, sha: str) -> str:
    commands = repr(check_runs.configured_commands(repository)) + repr(
        (
            repository.setup_command or repository.detected("setup_command"),
            check_runs.check_timeout(repository),
        )
    )
    digest = hashlib.sha256(commands.encode()).hexdigest()[:16]
    return f"codex:baseline:{repository.pk}:{sha}:{digest}"


def summarize(checks: list[check_runs.CheckRun]) -> dict[str, Any]:
    """Each check's status and failing test names, by kind."""
    summary: dict[str, Any] = {}
    for check in checks:
        failing = []
        if not check.ok:
            failing = sorted(
                {str(f.get("name")) for f in check_runs.test_results(check)["failures"]}
                if check.kind == check_runs.TEST
                else set()
            )
        summary[check.kind] = {"status": check.status, "failing": failing}
    return summary


def for_task(worktree: Path, repository: Repository) -> dict[str, Any] | None:
    """The base commit's check outcomes ({"sha", "checks": {kind: {status,
    failing}}}), from the cache or run now; None when they cannot be known
    (no base commit, no jail, a setup that fails on the base)."""
    try:
        sha = base_commit(worktree, repository)
    except ClassifiedFailure:
        return None
    if not sha:
        return None
    key = cache_key(repository, sha)
    cached = cache.get(key)
    if cached is not None:
        return cached
    checks = _run_on(worktree, repository, sha)
    if checks is None:
        return None
    result = {"sha": sha, "checks": summarize(checks)}
    cache.set(key, result, CACHE_SECONDS)
    return result


def _run_on(
    worktree: Path, repository: Repository, sha: str
) -> list[check_runs.CheckRun] | None:
    """Run the checks on a detached worktree of `sha`, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="codex-baseline-"))
    base = folder / "base"
    try:
        run_git(["worktree", "add", "--detach", "--quiet", str(base), sha], worktree)
        jail = Jail.for_worktree(
            base,
            image=repository.sandbox_image,
            worktree_quota_mb=repository.worktree_quota_mb,
        )
        # The base's own setup (its lock files), usually a copy from the cache.
        jail, not_ready = prepare_environment(repository, jail, record=False)
        if not_ready:
            return None
        sandbox = Sandbox(base, jail=jail, allowed_commands=repository.allowed_commands)
        return check_runs.run_checks(sandbox, repository)
    except (ClassifiedFailure, JailUnavailable, OSError):
        logger.warning("the base commit %s could not be checked", sha, exc_info=True)
        return None
    finally:
        with contextlib.suppress(ClassifiedFailure):
            run_git(["worktree", "remove", "--force", str(base)], worktree)
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(ClassifiedFailure):
            run_git(["worktree", "prune"], worktree)


def note(baseline: dict[str, Any] | None) -> str:
    """What QA and the reviewer are told about the base commit's checks."""
    if not baseline:
        return ""
    lines = [f"The same commands on the base commit {baseline['sha'][:12]}:"]
    for kind, outcome in baseline["checks"].items():
        label = check_runs.CHECK_LABELS.get(kind, kind)
        line = f"- {label}: {outcome['status']}"
        if outcome["failing"]:
            shown = ", ".join(outcome["failing"][:20])
            line += f" (failing there already: {shown})"
        lines.append(line)
    lines.append(
        "Failures that already happen on the base are not this change's: they "
        "are reported, and do not send the change back."
    )
    return "\n".join(lines)
