"""A worktree's environment: what detection finds at its commit, merged
with the repository's own settings (which always win), and the setup that
makes it, run once or copied from the setup cache.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings

from agents.ecosystems import compiled, javascript, python
from agents.ecosystems.cache import SetupCache
from agents.ecosystems.model import Detection, Which
from agents.ecosystems.tree import Tree
from agents.setup import ensure_setup
from integrations.jail import SYSTEM_PATH

if TYPE_CHECKING:
    from codex.repositories.models import Repository
    from integrations.jail import Jail

logger = logging.getLogger(__name__)

# Read besides the top folder: requirement files, tests (which runner),
# Go's committed vendor folder.
FOLDERS = ("requirements", "tests", "test")
PATHS = ("vendor/modules.txt",)
DETECTORS = (python.detect, javascript.detect, compiled.detect_go, compiled.detect_rust)


def host_which(program: str) -> str | None:
    """Where `program` is on the jail's configured PATH, looked up on this
    machine (the jail's own `which` is better when a jail is at hand)."""
    return shutil.which(program, path=settings.CODEX_SANDBOX_PATH or SYSTEM_PATH)


def detect(
    worktree: Path, commit: str = "HEAD", which: Which | None = None
) -> Detection:
    """Every ecosystem at the top of the worktree's tracked files at `commit`."""
    tree = Tree.at(Path(worktree), commit, FOLDERS, PATHS)
    which = which or host_which
    found = tuple(
        ecosystem
        for detector in DETECTORS
        if (ecosystem := detector(tree, which)) is not None
    )
    key_files = [path for ecosystem in found for path in ecosystem.key_files]
    return Detection(tree.commit, found, tree.blobs(key_files))


@dataclass(frozen=True)
class Environment:
    """What a worktree's setup runs: the repository's setup command and hosts
    when it names them, else the detected ones (with their variables)."""

    detection: Detection
    setup_command: str
    setup_hosts: list[str]
    env: dict[str, str] = field(default_factory=dict)
    # Where the setup command comes from: repository, detected, or "" (none).
    setup_source: str = ""


def remember(repository: Repository, detection: Detection) -> None:
    """Store the detection on the repository (the console shows it, the
    checks read its test command); written only when it differs from what
    the repository, as the step read it, holds: a detection changes with a
    manifest, not with each step."""
    found = detection.as_json()
    known = repository.detected_environment
    repository.detected_environment = found
    if repository.pk is None or known == found:
        return
    from codex.repositories.models import Repository

    repository.detected_at_commit = detection.commit
    # Only these columns: an operator may be editing the others.
    Repository.objects.filter(pk=repository.pk).update(
        detected_environment=found, detected_at_commit=detection.commit
    )


def environment_for(
    repository: Repository,
    worktree: Path,
    which: Which | None = None,
    *,
    record: bool = True,
) -> Environment:
    """Detect the worktree's ecosystems at HEAD, remember the detection on
    the repository (unless not `record`), and say what its setup is."""
    detection = detect(worktree, which=which)
    if record:
        remember(repository, detection)
    own = (repository.setup_command or "").strip()
    if own:
        # The repository's own command keeps its own network: none unless named.
        return Environment(detection, own, repository.setup_hosts, {}, "repository")
    command = detection.setup_command
    return Environment(
        detection,
        command,
        repository.setup_hosts or detection.hosts,
        detection.env,
        "detected" if command else "",
    )


def prepare_environment(
    repository: Repository, jail: Jail, *, record: bool = True
) -> tuple[Jail, str]:
    """Make the worktree of `jail` ready for the repository's commands.

    Detects its ecosystems, runs the setup (the repository's or the detected
    one) through the allow-list proxy once per worktree, or copies its result
    from the setup cache when another worktree made it with the same key.
    Returns the jail every later command of this worktree must use (with the
    variables the setup's result needs) and "" when ready, else why not.
    `record`: False for a worktree that is not the task's (the base commit's
    checks), whose detection must not replace the task's.
    """
    environment = environment_for(
        repository, jail.worktree, which=jail.which, record=record
    )
    if environment.env:
        jail = dataclasses.replace(
            jail, extra_env={**jail.extra_env, **environment.env}
        )
    cache = SetupCache.for_environment(repository, jail, environment)
    not_ready = ensure_setup(
        jail, environment.setup_command, environment.setup_hosts, cache=cache
    )
    return jail, not_ready
