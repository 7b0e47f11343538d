"""The repository map: an outline of a repository for an agent's context.

`repository_map(worktree, commit=..., budget_tokens=...)` lists, file by file,
the classes, functions and methods of the commit's Python, JavaScript,
TypeScript, Go and Rust files, one line each with its line number and
signature, the most referenced first, as much as fits in the budget (counted
as four characters a token). `focus` names the files that matter to the
request (mentioned in it, changed on the branch): theirs come first, and what
they use ranks higher. For example:

    agents/sandbox.py:
        46 class Sandbox(JailedCommands)
        73   def resolve(self, name: str, *, for_write: bool = False) -> Path

Files are parsed with tree-sitter (languages.py, tags.py; many at once in
worker processes, parsing.py), read only when their content was never seen
(files.py), ranked by references (ranking.py) and cached: tags by content,
finished maps by commit, budget and focus (store.py). Built on an edited
worktree, the map still comes out (from what is there) but is not cached as
the commit's.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agents.repo_map import files as files_module
from agents.repo_map import parsing, ranking, tags
from agents.repo_map.store import MapStore, TagStore

__all__ = ["Built", "build", "repository_map"]

logger = logging.getLogger(__name__)
CHARS_PER_TOKEN = 4
STORE_BATCH = 2000  # parsed files written to the tag cache at a time


@dataclass(frozen=True)
class Built:
    """A map and how it was made: `files` in the map's languages, `parsed`
    of them this time (the rest from the tag cache), `cached` when the whole
    text came from the map cache (then nothing was listed: files is 0)."""

    text: str
    commit: str
    files: int
    parsed: int
    cached: bool


def repository_map(
    worktree: str | os.PathLike[str],
    *,
    commit: str,
    budget_tokens: int,
    focus: Iterable[str] = (),
    cache_dir: str | os.PathLike[str] | None = None,
) -> str:
    """The map of `commit` (checked out in `worktree`) in at most
    `budget_tokens`; "" when the budget is 0 or the map cannot be made (an
    outline is a help to the agent, never a reason to fail its run).
    `cache_dir`: CODEX_REPO_MAP_CACHE_DIR unless given."""
    if budget_tokens <= 0:
        return ""
    try:
        return build(
            worktree,
            commit=commit,
            budget_tokens=budget_tokens,
            focus=focus,
            cache_dir=cache_dir,
        ).text
    except Exception:  # noqa: BLE001 - logged; the run goes on without a map
        logger.exception("repository map of %s at %s failed", worktree, commit)
        return ""


def build(
    worktree: str | os.PathLike[str],
    *,
    commit: str,
    budget_tokens: int,
    focus: Iterable[str] = (),
    cache_dir: str | os.PathLike[str] | None = None,
) -> Built:
    """`repository_map`, with how it was made, raising what goes wrong."""
    root = Path(worktree).resolve()
    folder = Path(cache_dir) if cache_dir is not None else _default_folder()
    sha = files_module.resolve_commit(root, commit)
    focus = sorted({str(f) for f in focus})
    map_key = _map_key(sha, budget_tokens, focus)
    maps = MapStore(folder)
    text = maps.get(map_key)
    if text is not None:
        return Built(text, sha, files=0, parsed=0, cached=True)

    entries = files_module.source_files(root, sha)
    keys = [f"{entry.blob}:{entry.language}" for entry in entries]
    with TagStore(folder) as store:
        known = store.names_and_references(keys)
        missing = [e for e, k in zip(entries, keys, strict=True) if k not in known]
        reading = _Reading(root, missing, known)
        # Outlines go to the store as they come (a first map of a large
        # repository would otherwise hold hundreds of MB of them); they stay
        # in memory only when the store cannot keep them.
        kept_here: dict[str, bytes] = {}
        batch: list[tuple[str, tags.Row]] = []
        parsed = 0
        for key, found in parsing.parse_all(reading.jobs(), len(missing)):
            parsed += 1
            known[key] = (tags.split(found[1]), tags.split(found[2]))
            batch.append((key, found))
            if len(batch) >= STORE_BATCH:
                _keep(store, batch, kept_here)
        _keep(store, batch, kept_here)
        exact = reading.exact and all(k in known for k in reading.read.values())
        # Each file's key: of what the commit holds, or of what was read.
        for index, entry in enumerate(entries):
            keys[index] = reading.read.get(entry.path, keys[index])
        names, references = [], []
        for k in keys:
            defined, referred = known.get(k, ((), ()))
            names.append(defined)
            references.append(referred)

        @functools.cache
        def outline_of(index: int) -> list[tags.Definition]:
            key = keys[index]
            if key in kept_here:
                return tags.loads_outline(kept_here[key])
            return store.outlines([key]).get(key, [])

        paths = [entry.path for entry in entries]
        focused = ranking.focused_files(paths, focus)
        order = ranking.ranked(names, references, focused)
        text = ranking.fit(paths, outline_of, order, budget_tokens * CHARS_PER_TOKEN)
    if exact:
        maps.put(map_key, text)
    return Built(text, sha, files=len(entries), parsed=parsed, cached=False)


def _keep(store: TagStore, batch: list, kept_here: dict) -> None:
    if batch and not store.put_many(batch):
        kept_here.update((key, found[0]) for key, found in batch)
    batch.clear()


class _Reading:
    """Reads the files whose tags are missing, keeping the key of what was
    read for each and whether all of it was the commit's own content."""

    def __init__(
        self, root: Path, missing: list[files_module.Entry], known: dict
    ) -> None:
        self.root = root
        self.known = known
        self.missing = {entry.path: entry for entry in missing}
        self.read: dict[str, str] = {}  # path -> key of the content read
        self.keys: set[str] = set()
        self.exact = True

    def jobs(self) -> Iterator[parsing.Job]:
        for path, content in files_module.read_files(self.root, self.missing):
            entry = self.missing[path]
            if not isinstance(content, bytes):
                # Not there or not a regular file: not what the commit holds.
                # Too large: the commit's file is (the cap is on its size).
                self.exact = self.exact and content == files_module.TOO_LARGE
                continue
            blob = files_module.blob_id(content, entry.blob)
            self.exact = self.exact and blob == entry.blob
            key = f"{blob}:{entry.language}"
            seen = key in self.keys or key in self.known
            self.read[path] = key
            if not seen:  # the same content at many paths is parsed once
                self.keys.add(key)
                yield key, entry.language, content


def _map_key(sha: str, budget_tokens: int, focus: list[str]) -> str:
    digest = hashlib.sha256("\0".join(focus).encode()).hexdigest()[:16]
    return f"v{tags.VERSION}-{sha}-{budget_tokens}-{digest}"


def _default_folder() -> Path:
    from django.conf import settings

    return Path(settings.CODEX_REPO_MAP_CACHE_DIR)
