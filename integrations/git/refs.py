"""Refs read from git's own files, without starting git: for a lookup made at
every step of every task (agents/people.py's rules, by base and head commit),
where starting `git rev-parse` cost more than the rest of the lookup.

Only the plain cases are answered: a worktree (linked or not) whose refs are
files (loose, or in packed-refs), and names that are `HEAD`, a full `refs/...`
name or a short one git would find under refs/, refs/tags/, refs/heads/ or
refs/remotes/ (in that order, as `git rev-parse` looks). Anything else (a
reftable, a revision expression, an odd file) answers None, and the caller
asks git, so what is answered is always what git would say.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

OBJECT_ID = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
# A plain ref name: no revision syntax (~ ^ : @{ ..), no glob, nothing git
# would refuse as a ref; and not all hex (that could be an abbreviated id).
PLAIN_NAME = re.compile(r"^(?!/)(?!.*//)(?!.*\.\.)(?!.*/$)[A-Za-z0-9._/-]+$")
HEX = re.compile(r"^[0-9a-f]+$")
SHORT_NAME_RULES = (
    "refs/{}",
    "refs/tags/{}",
    "refs/heads/{}",
    "refs/remotes/{}",
    "refs/remotes/{}/HEAD",
)
# Refs that live beside a linked worktree's HEAD rather than in the common
# folder: not read here.
PER_WORKTREE = ("refs/worktree/", "refs/bisect/", "refs/rewritten/")
SYMBOLIC_DEPTH = 5


class _AskGit(Exception):
    """Something this module does not read: git answers instead."""


def read_refs(
    worktree: str | os.PathLike[str], names: Sequence[str]
) -> list[str] | None:
    """The object ids `names` point at in `worktree`'s repository, as `git
    rev-parse <names>` prints them; None when git must be asked (a name not
    found included: git then says why)."""
    try:
        admin, common = _folders(Path(worktree))
        packed = _packed_refs(common)
        found = [_resolve(admin, common, packed, name) for name in names]
    except _AskGit:
        return None
    oids = [oid for oid in found if oid is not None]
    return oids if len(oids) == len(found) else None


def _folders(worktree: Path) -> tuple[Path, Path]:
    """The worktree's own git folder (its HEAD) and the common one (refs,
    objects): the same folder unless it is a linked worktree."""
    link = worktree / ".git"
    if link.is_dir() and not link.is_symlink():
        admin = link
    else:
        try:
            pointer = link.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            raise _AskGit from None
        if not pointer.startswith("gitdir: "):
            raise _AskGit
        admin = (worktree / pointer.removeprefix("gitdir: ")).resolve()
    try:
        common = (admin / (admin / "commondir").read_text().strip()).resolve()
    except FileNotFoundError:
        common = admin
    except (OSError, UnicodeDecodeError):
        raise _AskGit from None
    if (common / "reftable").exists() or not (common / "refs").is_dir():
        raise _AskGit
    return admin, common


def _packed_refs(common: Path) -> dict[str, str]:
    try:
        text = (common / "packed-refs").read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError):
        raise _AskGit from None
    refs = {}
    for line in text.splitlines():
        if not line or line.startswith(("#", "^")):
            continue  # the header; a tag's peeled commit
        oid, _, name = line.partition(" ")
        if not OBJECT_ID.match(oid) or not name.startswith("refs/"):
            raise _AskGit
        refs[name] = oid
    return refs


def _resolve(
    admin: Path, common: Path, packed: dict[str, str], name: str
) -> str | None:
    if name == "HEAD" or name.startswith("refs/"):
        return _ref(admin, common, packed, name, 0)
    if not PLAIN_NAME.match(name) or HEX.match(name):
        raise _AskGit
    # git tries the name as it is first (a file such as FETCH_HEAD): one
    # that exists is not for this module.
    if (admin / name).exists() or (common / name).exists():
        raise _AskGit
    for rule in SHORT_NAME_RULES:
        oid = _ref(admin, common, packed, rule.format(name), 0)
        if oid is not None:
            return oid
    return None


def _ref(
    admin: Path, common: Path, packed: dict[str, str], name: str, depth: int
) -> str | None:
    """The object id of full ref `name` (HEAD or refs/...), following
    symbolic refs; None when there is no such ref."""
    if depth > SYMBOLIC_DEPTH or name.startswith(PER_WORKTREE):
        raise _AskGit
    if name != "HEAD" and not (name.startswith("refs/") and PLAIN_NAME.match(name)):
        raise _AskGit
    try:
        content = ((admin if name == "HEAD" else common) / name).read_text("utf-8")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        content = None
    except (OSError, UnicodeDecodeError):
        raise _AskGit from None
    if content is None:
        return packed.get(name)
    content = content.strip()
    if content.startswith("ref: "):
        return _ref(admin, common, packed, content.removeprefix("ref: "), depth + 1)
    if OBJECT_ID.match(content):
        return content
    raise _AskGit
