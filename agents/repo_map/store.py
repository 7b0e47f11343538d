"""The map's two caches, under one folder (CODEX_REPO_MAP_CACHE_DIR by default).

- `tags-v<n>.sqlite3`: each file's tags by blob id and language. A blob id
  names a content, so the entry serves every commit, branch and clone that
  holds the same file: a new commit parses only the files it changed.
- `maps/`: the finished text of a map, by commit, budget and focus. A commit
  id names its whole tree, so the repository need not be part of the key.

Both are only caches: an unreadable or broken one is set aside and the map is
built without it, never failing the agent's run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from agents.repo_map.tags import VERSION, Definition, Row, loads_outline, split

logger = logging.getLogger(__name__)

# Finished maps unread for this long are removed when a new one is written.
MAP_MAX_AGE_SECONDS = 14 * 24 * 3600
_CHUNK = 900  # keys per query, under SQLite's oldest limit of host parameters
# How long to wait for another process writing the tag cache.
BUSY_SECONDS = 30


class TagStore:
    """Tags by "<blob id>:<language>": the names a file defines and refers to
    (read for every file, to rank) apart from its outline (read only for the
    files shown)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / f"tags-v{VERSION}.sqlite3"
        self._connection: sqlite3.Connection | None = None

    def __enter__(self) -> TagStore:
        return self

    def __exit__(self, *exc) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=BUSY_SECONDS)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS tags (key TEXT PRIMARY KEY, "
                "names TEXT, refs TEXT, outline BLOB)"
            )
            self._connection = connection
        return self._connection

    def names_and_references(
        self, keys: Sequence[str]
    ) -> dict[str, tuple[list[str], list[str]]]:
        return {
            key: (split(names), split(refs))
            for key, names, refs in self._select("key, names, refs", keys)
        }

    def outlines(self, keys: Sequence[str]) -> dict[str, list[Definition]]:
        return {
            key: loads_outline(data) for key, data in self._select("key, outline", keys)
        }

    def _select(self, columns: str, keys: Sequence[str]) -> list[tuple]:
        rows: list[tuple] = []
        try:
            connection = self._connect()
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows += connection.execute(
                    f"SELECT {columns} FROM tags WHERE key IN ({marks})",  # noqa: S608 - our own columns, placeholders
                    chunk,
                )
        except (sqlite3.Error, OSError) as exc:
            self._failed(exc)
        return rows

    def put_many(self, items: Iterable[tuple[str, Row]]) -> bool:
        """Keep `items`; False when the store could not."""
        rows = [(key, names, refs, outline) for key, (outline, names, refs) in items]
        try:
            connection = self._connect()
            with connection:
                connection.executemany(
                    "INSERT OR REPLACE INTO tags (key, names, refs, outline) "
                    "VALUES (?, ?, ?, ?)",
                    rows,
                )
        except (sqlite3.Error, OSError) as exc:
            self._failed(exc)
            return False
        return True

    def _failed(self, exc: Exception) -> None:
        """A broken file is set aside (the next map starts a new one); a busy,
        read-only or missing one is only skipped this time."""
        self.__exit__()
        if isinstance(exc, OSError | sqlite3.OperationalError):
            logger.warning("repository map: tag cache %s skipped: %s", self.path, exc)
            return
        logger.warning(
            "repository map: tag cache %s is broken (%s); set aside", self.path, exc
        )
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.replace(f"{self.path}{suffix}", f"{self.path}{suffix}.broken")


class MapStore:
    """Finished maps, one small file each."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder / "maps"

    def _file(self, key: str) -> Path:
        return self.folder / f"{key}.txt"

    def get(self, key: str) -> str | None:
        file = self._file(key)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        with contextlib.suppress(OSError):
            os.utime(file)  # read now: kept another MAP_MAX_AGE_SECONDS
        return text

    def put(self, key: str, text: str) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.folder, suffix=".part")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, self._file(key))
            self._prune()
        except OSError:
            logger.warning("repository map: cannot keep a map in %s", self.folder)

    def _prune(self) -> None:
        horizon = time.time() - MAP_MAX_AGE_SECONDS
        with os.scandir(self.folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.stat().st_mtime < horizon:
                        os.unlink(entry.path)
