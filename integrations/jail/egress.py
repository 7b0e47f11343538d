"""The setup step's only way out: an HTTPS proxy that lets through the hosts a
repository allows (its package registries), and nothing else.

The jail has no network of its own. For a setup command whose repository
names hosts (`Repository.setup_network_hosts`), Codex serves an HTTP CONNECT
proxy on a Unix socket that is bound into the jail; a small forwarder inside
the jail listens on 127.0.0.1:3128 and `HTTPS_PROXY` points there, so pip, npm
and their kin reach the allowed hosts on port 443. The proxy refuses any other
host or port, plain HTTP, and any name that resolves to an address of this
machine or its private networks (a registry name pointed at the worker's
PostgreSQL is refused, and so is an address that maps or tunnels to one:
`integrations.jail.addresses`). Agents' commands never get it.
"""

from __future__ import annotations

import contextlib
import logging
import re
import select
import shlex
import socket
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from integrations.jail.addresses import is_public_address
from integrations.jail.backends import EGRESS_DIR

logger = logging.getLogger(__name__)

PROXY_PORT = 3128
SOCKET_DIR = EGRESS_DIR
SOCKET_NAME = "proxy.sock"
HEADER_LIMIT = 16_384
IDLE_SECONDS = 120
HOST_NAME = re.compile(
    r"^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$"
)

# Runs inside the jail (python3 of the system): 127.0.0.1:3128 -> the socket.
FORWARDER = r"""
import os, socket, sys, threading
path = sys.argv[1]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 3128))
server.listen(64)
def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
def serve(client):
    upstream = socket.socket(socket.AF_UNIX)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
    pipe(upstream, client)
print("ready", flush=True)
while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""


def allowed_host_list(text: str) -> list[str]:
    """The host names of a repository's allow-list (space or comma separated,
    lowercase, no ports, no wildcards, no addresses); ValueError names the
    first that is not one."""
    hosts = []
    for item in re.split(r"[\s,]+", (text or "").strip().lower()):
        if not item:
            continue
        if not HOST_NAME.match(item):
            raise ValueError(
                f"{item!r} is not a host name (write e.g. pypi.org "
                "files.pythonhosted.org registry.npmjs.org)"
            )
        hosts.append(item)
    return hosts


class EgressProxy:
    """A CONNECT proxy for `hosts` on a Unix socket in a folder of its own,
    for the time of a `with` block."""

    def __init__(
        self,
        hosts: Iterable[str],
        *,
        ports: Iterable[int] = (443,),
        resolve: Callable[[str, int], set[str]] | None = None,
        address_allowed: Callable[[str], bool] = is_public_address,
    ) -> None:
        """`resolve` and `address_allowed` are seams for tests (a registry on
        loopback); the product uses DNS and refuses non-public addresses."""
        self.hosts = frozenset(host.lower() for host in hosts)
        self.ports = frozenset(ports)
        self.resolve = resolve or _resolve
        self.address_allowed = address_allowed
        self.folder = Path(tempfile.mkdtemp(prefix="codex-egress-"))
        self.folder.chmod(0o755)
        self.path = self.folder / SOCKET_NAME
        self.refused: list[str] = []
        self._server = socket.socket(socket.AF_UNIX)
        self._stopped = threading.Event()

    def __enter__(self) -> EgressProxy:
        self._server.bind(str(self.path))
        # The jail's user connects to it (a uid of its own namespace).
        self.path.chmod(0o777)
        self._server.listen(64)
        self._server.settimeout(0.2)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._server.close()
        with contextlib.suppress(OSError):
            self.path.unlink()
        with contextlib.suppress(OSError):
            self.folder.rmdir()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with contextlib.closing(client):
            client.settimeout(30)
            try:
                head = _read_head(client)
                host, port = _connect_target(head)
                upstream = self._open(host, port)
            except PermissionError as exc:
                self.refused.append(str(exc))
                logger.warning("setup egress refused: %s", exc)
                _answer(client, 403, str(exc))
                return
            except (OSError, ValueError) as exc:
                _answer(client, 502, str(exc))
                return
            with contextlib.closing(upstream):
                _answer(client, 200, "Connection established")
                _relay(client, upstream)

    def _open(self, host: str, port: int) -> socket.socket:
        if host not in self.hosts:
            raise PermissionError(f"{host} is not on the repository's allow-list")
        if port not in self.ports:
            raise PermissionError(f"{host}:{port}: only port 443 is allowed")
        addresses = self.resolve(host, port)
        if not addresses or not all(self.address_allowed(a) for a in addresses):
            raise PermissionError(f"{host} resolves to a non-public address")
        # Connect to the address checked above, not to a new resolution.
        address = sorted(addresses)[0]
        return socket.create_connection((address, port), timeout=30)


def _resolve(host: str, port: int) -> set[str]:
    return {info[4][0] for info in socket.getaddrinfo(host, port)}


def _read_head(client: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(4096)
        if not chunk:
            raise ValueError("the request ended early")
        data += chunk
        if len(data) > HEADER_LIMIT:
            raise ValueError("request head too large")
    return data


def _connect_target(head: bytes) -> tuple[str, int]:
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split()
    if len(parts) != 3 or parts[0] != "CONNECT":
        raise PermissionError("only HTTPS (CONNECT) is allowed")
    host, _, port = parts[1].rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"bad CONNECT target {parts[1]!r}")
    return host.strip("[]").lower().rstrip("."), int(port)


def _answer(client: socket.socket, status: int, reason: str) -> None:
    text = reason.replace("\r", " ").replace("\n", " ")[:200]
    with contextlib.suppress(OSError):
        client.sendall(
            f"HTTP/1.1 {status} {text}\r\nContent-Length: 0\r\n\r\n".encode()
        )


def _relay(a: socket.socket, b: socket.socket) -> None:
    sockets = [a, b]
    for sock in sockets:
        sock.settimeout(None)
    while True:
        readable, _, _ = select.select(sockets, [], [], IDLE_SECONDS)
        if not readable:
            return
        for sock in readable:
            try:
                data = sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            other = b if sock is a else a
            try:
                other.sendall(data)
            except OSError:
                return


def proxy_environment() -> dict[str, str]:
    """What a setup command's environment adds to use the proxy."""
    url = f"http://127.0.0.1:{PROXY_PORT}"
    return {
        "HTTPS_PROXY": url,
        "https_proxy": url,
        "HTTP_PROXY": url,
        "http_proxy": url,
        "NO_PROXY": "",
    }


def wrapped_command(command: str) -> list[str]:
    """bash that starts the forwarder, waits for it, then runs `command`."""
    socket_path = f"{SOCKET_DIR}/{SOCKET_NAME}"
    script = (
        f"python3 -c {shlex.quote(FORWARDER)} {socket_path} > /tmp/.egress 2>&1 & "
        "for _ in $(seq 1 100); do grep -q ready /tmp/.egress 2>/dev/null && break; "
        "sleep 0.05; done; "
        f"{command}"
    )
    return ["bash", "-c", script]


__all__ = [
    "PROXY_PORT",
    "SOCKET_DIR",
    "EgressProxy",
    "allowed_host_list",
    "proxy_environment",
    "wrapped_command",
]
