"""Parsing many files at once: in worker processes when there are thousands
(a first map of a large repository), in this process otherwise.

tree-sitter holds the GIL while it parses, so threads would not help; the
workers are plain child processes (`python -m agents.repo_map.worker`) fed
length-prefixed marshal frames over pipes. They get no environment of the
worker's (no keys), and one crashing on a file loses only its chunk: those
files are left out of this map and not cached, so the next map tries them
again.
"""

from __future__ import annotations

import logging
import marshal
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

from agents.repo_map.files import looks_generated
from agents.repo_map.tags import EMPTY, Tags, extract

logger = logging.getLogger(__name__)

# Below this many files, starting workers costs more than it saves.
PARALLEL_FROM = 1500
MAX_WORKERS = 4
CHUNK_FILES = 200
# A chunk takes a worker well under a second; one taking this long is stuck.
CHUNK_SECONDS = 120
_PROJECT = Path(__file__).resolve().parents[2]

Job = tuple[str, str, bytes]  # (key, language, content)


def tags_of(language: str, content: bytes) -> Tags:
    """The tags of one file; none for generated code."""
    return EMPTY if looks_generated(content) else extract(language, content)


def parse_all(jobs: Iterable[Job], count: int) -> dict[str, Tags]:
    """Tags by key for `jobs` (`count` of them; an iterable, so that reading
    the files goes on while workers parse)."""
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if count < PARALLEL_FROM or workers < 2:
        return {key: tags_of(language, content) for key, language, content in jobs}
    return _in_workers(jobs, workers)


def _in_workers(jobs: Iterable[Job], workers: int) -> dict[str, Tags]:
    chunks: queue.Queue = queue.Queue(maxsize=workers * 2)
    results: dict[str, Tags] = {}
    threads = [
        threading.Thread(target=_serve, args=(chunks, results), daemon=True)
        for _ in range(workers)
    ]
    for thread in threads:
        thread.start()
    chunk: list[Job] = []
    for job in jobs:
        chunk.append(job)
        if len(chunk) >= CHUNK_FILES:
            chunks.put(chunk)
            chunk = []
    if chunk:
        chunks.put(chunk)
    for _ in threads:
        chunks.put(None)
    for thread in threads:
        thread.join()
    return results


def _serve(chunks: queue.Queue, results: dict[str, Tags]) -> None:
    """One worker process, fed chunk after chunk; started again when it
    dies."""
    worker: _Worker | None = None
    try:
        while (chunk := chunks.get()) is not None:
            worker = worker or _Worker()
            try:
                found = worker.parse([(language, data) for _, language, data in chunk])
            except Exception as exc:  # noqa: BLE001 - the chunk is left out, said
                logger.warning(
                    "repository map: a parsing worker failed on %d files (%s); "
                    "they are left out",
                    len(chunk),
                    exc,
                )
                worker.stop()
                worker = None
                continue
            for (key, _, _), tags in zip(chunk, found, strict=True):
                results[key] = tags
    finally:
        if worker is not None:
            worker.stop()


class _Worker:
    def __init__(self) -> None:
        environment = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C.UTF-8"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agents.repo_map.worker"],
            cwd=_PROJECT,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.timer: threading.Timer | None = None

    def parse(self, files: list[tuple[str, bytes]]) -> list[Tags]:
        assert self.process.stdin is not None and self.process.stdout is not None
        # A stuck worker is killed, which ends the read below.
        self.timer = threading.Timer(CHUNK_SECONDS, self.process.kill)
        self.timer.start()
        try:
            write_frame(self.process.stdin, files)
            answer = read_frame(self.process.stdout)
        finally:
            self.timer.cancel()
        if len(answer) != len(files):
            raise ValueError("a worker answered for other files")
        return [Tags(*found) for found in answer]

    def stop(self) -> None:
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


def write_frame(stream, value) -> None:
    payload = marshal.dumps(value)
    stream.write(len(payload).to_bytes(8, "big") + payload)
    stream.flush()


def read_frame(stream):
    header = stream.read(8)
    if len(header) < 8:
        raise EOFError("the worker ended")
    size = int.from_bytes(header, "big")
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError("the worker ended mid-answer")
    return marshal.loads(payload)
