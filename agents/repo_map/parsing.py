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
from collections.abc import Iterable, Iterator
from pathlib import Path

from agents.repo_map.files import looks_generated
from agents.repo_map.tags import EMPTY, Row, extract, row

logger = logging.getLogger(__name__)

# Below this many files, starting workers costs more than it saves.
PARALLEL_FROM = 1500
MAX_WORKERS = 4
CHUNK_FILES = 200
# A chunk takes a worker well under a second; one taking this long is stuck.
CHUNK_SECONDS = 120
_PROJECT = Path(__file__).resolve().parents[2]

Job = tuple[str, str, bytes]  # (key, language, content)


def row_of(language: str, content: bytes) -> Row:
    """What is kept of one file (nothing for generated code)."""
    return row(EMPTY if looks_generated(content) else extract(language, content))


def parse_all(jobs: Iterable[Job], count: int) -> Iterator[tuple[str, Row]]:
    """(key, row) for `jobs` (`count` of them), as they are parsed. `jobs` is
    an iterable, so reading the files goes on while workers parse; the
    answers come as a stream, so the caller can store them as they come
    instead of holding every outline at once."""
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if count < PARALLEL_FROM or workers < 2:
        for key, language, content in jobs:
            yield key, row_of(language, content)
        return
    yield from _in_workers(jobs, workers)


def _in_workers(jobs: Iterable[Job], workers: int) -> Iterator[tuple[str, Row]]:
    chunks: queue.Queue = queue.Queue(maxsize=workers * 2)
    answers: queue.Queue = queue.Queue()
    failure: list[BaseException] = []
    threads = [
        threading.Thread(target=_serve, args=(chunks, answers), daemon=True)
        for _ in range(workers)
    ]
    feeder = threading.Thread(
        target=_feed, args=(jobs, chunks, workers, failure), daemon=True
    )
    for thread in (*threads, feeder):
        thread.start()
    done = 0
    while done < workers:
        answer = answers.get()
        if answer is None:
            done += 1
        else:
            yield from answer
    feeder.join()
    if failure:
        raise failure[0]


def _feed(
    jobs: Iterable[Job], chunks: queue.Queue, workers: int, failure: list
) -> None:
    """Read the files (the `jobs` iterable) into chunks for the workers; the
    workers are always told the end, whatever happens here."""
    try:
        chunk: list[Job] = []
        for job in jobs:
            chunk.append(job)
            if len(chunk) >= CHUNK_FILES:
                chunks.put(chunk)
                chunk = []
        if chunk:
            chunks.put(chunk)
    except BaseException as exc:  # noqa: BLE001 - raised again by the consumer
        failure.append(exc)
    finally:
        for _ in range(workers):
            chunks.put(None)


def _serve(chunks: queue.Queue, answers: queue.Queue) -> None:
    """One worker process, fed chunk after chunk (started again when it
    dies); its answers go to `answers`, then None when the chunks end."""
    worker: _Worker | None = None
    try:
        while (chunk := chunks.get()) is not None:
            # Whatever fails, this thread goes on taking chunks: the thread
            # reading the files must never wait on a full queue for ever.
            try:
                worker = worker or _Worker()
                found = worker.parse([(language, data) for _, language, data in chunk])
            except Exception as exc:  # noqa: BLE001 - the chunk is left out, said
                logger.warning(
                    "repository map: a parsing worker failed on %d files (%s); "
                    "they are left out",
                    len(chunk),
                    exc,
                )
                if worker is not None:
                    worker.stop()
                worker = None
                continue
            # parse() checked that there is one answer per file.
            pairs = zip(chunk, found, strict=True)
            answers.put([(key, found) for (key, _, _), found in pairs])
    finally:
        if worker is not None:
            worker.stop()
        answers.put(None)


class _Worker:
    def __init__(self) -> None:
        environment = {"PATH": os.environ.get("PATH", os.defpath)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agents.repo_map.worker"],
            cwd=_PROJECT,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.timer: threading.Timer | None = None

    def parse(self, files: list[tuple[str, bytes]]) -> list[Row]:
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
        return answer

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
