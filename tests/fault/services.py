"""Private servers for the restart tests: a PostgreSQL cluster, a Redis server
and a gunicorn web tier of their own, on free loopback ports.

The shared PostgreSQL (5432) and Redis (6379) serve every other test run on
the machine and are never restarted; these are started per test, restarted at
will and removed at the end (also when the test fails).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what} ({timeout:.0f} s)")
        time.sleep(interval)


def postgresql_bin() -> Path | None:
    """The newest /usr/lib/postgresql/<version>/bin holding initdb."""
    base = Path("/usr/lib/postgresql")
    versions = sorted(
        (p for p in base.glob("*/bin") if (p / "initdb").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if versions:
        return versions[-1]
    found = shutil.which("initdb")
    return Path(found).parent if found else None


@dataclass
class PrivatePostgres:
    """A throw-away PostgreSQL cluster (trust auth, no fsync) on a free port.

    As root the server runs as the `postgres` user (it refuses root); its data,
    socket and log live in one temporary folder that user owns."""

    bindir: Path
    directory: Path
    port: int

    @classmethod
    def create(cls) -> PrivatePostgres:
        bindir = postgresql_bin()
        if bindir is None:
            raise RuntimeError("PostgreSQL's server binaries (initdb) are missing")
        directory = Path(tempfile.mkdtemp(prefix="codex-pg-"))
        server = cls(bindir=bindir, directory=directory, port=free_port())
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(directory, user.pw_uid, user.pw_gid)
        server._run(
            "initdb",
            "-D",
            str(server.data),
            "--auth=trust",
            "--username=postgres",
            "--encoding=UTF8",
            "--no-sync",
        )
        return server

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, program: str, *args: str, timeout: float = 60) -> str:
        command = [str(self.bindir / program), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        completed = subprocess.run(
            command,
            cwd=self.directory,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if completed.returncode != 0:
            raise RuntimeError(
                f"{program} failed ({completed.returncode}):\n"
                f"{completed.stdout}\n{completed.stderr}\n{self.log()}"
            )
        return completed.stdout

    def _pg_ctl(self, action: str, *extra: str) -> None:
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=60"
        )
        self._run(
            "pg_ctl",
            action,
            "-D",
            str(self.data),
            "-l",
            str(self.log_path),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            *extra,
        )

    def start(self) -> None:
        self._pg_ctl("start")

    def stop(self, mode: str = "fast") -> None:
        self._pg_ctl("stop", "-m", mode)

    def restart(self, mode: str = "fast") -> None:
        self._pg_ctl("restart", "-m", mode)

    def create_database(self, name: str) -> None:
        self._run(
            "createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name
        )

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except (FileNotFoundError, PermissionError):
            return ""

    def destroy(self) -> None:
        with contextlib.suppress(Exception):
            self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)


@dataclass
class PrivateRedis:
    """A throw-away redis-server without persistence: a restart empties it."""

    port: int
    directory: Path
    process: subprocess.Popen | None = None

    @classmethod
    def create(cls, directory: Path) -> PrivateRedis:
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is not installed")
        server = cls(port=free_port(), directory=directory)
        server.start()
        return server

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        log = open(self.directory / f"redis-{self.port}.log", "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        wait_until(self.answers, 20, f"redis-server on port {self.port}")

    def answers(self) -> bool:
        address = ("127.0.0.1", self.port)
        with (
            contextlib.suppress(OSError),
            socket.create_connection(address, timeout=1) as sock,
        ):
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
        return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@dataclass
class Gunicorn:
    """`gunicorn codex.wsgi` with its own environment, in a session of its own."""

    process: subprocess.Popen
    port: int
    log_path: Path

    @classmethod
    def start(cls, env: dict[str, str], log_path: Path, workers: int = 2) -> Gunicorn:
        port = free_port()
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "gunicorn",
                    "codex.wsgi",
                    "--bind",
                    f"127.0.0.1:{port}",
                    "--workers",
                    str(workers),
                    "--timeout",
                    "60",
                    "--graceful-timeout",
                    "5",
                ],
                cwd=str(ROOT),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        server = cls(process=process, port=port, log_path=log_path)

        def listening() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"gunicorn exited:\n{server.log()}")
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            return False

        wait_until(listening, 30, "gunicorn to listen")
        return server

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.process.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
