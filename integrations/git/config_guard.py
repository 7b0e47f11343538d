"""Repository-local git settings that could run a program are removed.

Every git command Codex runs pins the settings that start programs
(`runner.HARDENED`) and reads no machine-wide or user configuration. What is
left is each repository's own config file, which only Codex writes: agents
work in a jail that cannot reach the mirror. Should anything else have
written it (an older Codex, a person, a bug), `scrub_local_config` removes
every key outside the few Codex uses before a step works in the repository,
so that no `include`, filter, diff or merge driver, credential helper, proxy
or URL rewrite defined there can act.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from integrations.git.runner import git

logger = logging.getLogger(__name__)

# What git itself writes at init, what Codex sets, and what `worktree add`
# and branch tracking record. Anything else is removed.
KNOWN_KEYS = re.compile(
    r"^(core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase"
    r"|precomposeunicode|symlinks)"
    r"|remote\.origin\.(url|fetch|tagopt|prune)"
    r"|branch\..+\.(remote|merge|rebase)"
    r"|extensions\.(objectformat|refstorage)"
    r"|gc\.(auto|autodetach|worktreepruneexpire))$"
)


SECTION = re.compile(r'^\s*\[\s*([^\s\]"]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(=|$)")


def scrub_local_config(repo: str | os.PathLike[str]) -> list[str]:
    """Remove the repository-local keys Codex does not use; return them.

    The file is read first, so the usual case (nothing to remove) starts no
    git; anything it cannot read plainly is left to git to list."""
    if _all_known(Path(repo) / "config"):
        return []
    listing = git(
        ["config", "--local", "--list", "--name-only", "-z"], repo, check=False
    )
    keys = sorted({key for key in listing.stdout.split("\0") if key})
    removed = [key for key in keys if not KNOWN_KEYS.match(key.lower())]
    for key in removed:
        git(["config", "--local", "--unset-all", key], repo, check=False)
    if removed:
        logger.warning(
            "removed git settings Codex does not use from %s: %s",
            os.fspath(repo),
            ", ".join(removed),
        )
    return removed


def _all_known(config: Path) -> bool:
    """Whether every key of `config` is a known one (False when unsure)."""
    try:
        text = config.read_text()
    except (OSError, UnicodeDecodeError):
        return False
    section = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        header = SECTION.match(line)
        if header:
            name, sub = header.group(1), header.group(2)
            if "]" in line[header.end() :] or "[" in line[header.end() :]:
                return False
            section = f"{name}.{sub}" if sub is not None else name
            if line[header.end() :].strip():
                return False  # a key on the header's line: let git read it
            continue
        key = KEY.match(line)
        if key is None or section is None or "\\" in line:
            return False
        if not KNOWN_KEYS.match(f"{section}.{key.group(1)}".lower()):
            return False
    return True
