"""The setup step's network is an allow-list: through the egress proxy it
reaches the hosts a repository names, and nothing else: no other host, no
other port, no plain HTTP, no name resolving to this machine, and agents'
commands never get the proxy at all."""

from __future__ import annotations

import socket
import threading

import pytest

from agents.setup import ensure_setup
from integrations.jail.egress import (
    EgressProxy,
    allowed_host_list,
    proxy_environment,
    wrapped_command,
)

CLIENT = r"""
import socket, sys
def ask(line):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    s.sendall(line.encode() + b"\r\n\r\n")
    answer = s.recv(200).decode().split("\r\n")[0]
    if " 200 " in answer:
        s.sendall(b"ping")
        answer += " -> " + s.recv(10).decode()
    print(line.split()[1], "=>", answer, flush=True)
port = sys.argv[1]
ask(f"CONNECT registry.test:{port} HTTP/1.1")
ask("CONNECT evil.test:443 HTTP/1.1")
ask(f"CONNECT registry.test:{int(port) + 1} HTTP/1.1")
ask("GET http://registry.test/ HTTP/1.1")
ask(f"CONNECT internal.test:{port} HTTP/1.1")
try:
    socket.create_connection(("127.0.0.1", int(port)), timeout=2)
    print("DIRECT CONNECTED")
except OSError:
    print("direct refused")
"""


@pytest.fixture
def registry():
    """A 'registry' on loopback answering pong to ping."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                if conn.recv(10) == b"ping":
                    conn.sendall(b"pong")

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def proxy_for(port: int) -> EgressProxy:
    # Test seams: the 'registry' lives on loopback, which the product refuses.
    return EgressProxy(
        ["registry.test", "internal.test"],
        ports=[port],
        resolve=lambda host, _port: {"127.0.0.1"},
        address_allowed=lambda address: address == "127.0.0.1",
    )


def test_only_the_allowed_host_and_port_get_through(jail, registry):
    proxy = proxy_for(registry)
    proxy.hosts = frozenset({"registry.test"})
    with proxy:
        script = jail.worktree / "client.py"
        script.write_text(CLIENT)
        result = jail.run(
            wrapped_command(f"python3 client.py {registry}"),
            egress=proxy.folder,
            env=proxy_environment(),
        )
    lines = result.output
    assert f"registry.test:{registry} => HTTP/1.1 200" in lines and "-> pong" in lines
    assert "evil.test:443 => HTTP/1.1 403" in lines
    assert f"registry.test:{registry + 1} => HTTP/1.1 403" in lines
    assert "http://registry.test/ => HTTP/1.1 403" in lines
    assert f"internal.test:{registry} => HTTP/1.1 403" in lines
    assert "direct refused" in lines and "DIRECT CONNECTED" not in lines
    assert len(proxy.refused) == 4


def test_a_name_resolving_to_this_machine_is_refused():
    proxy = EgressProxy(["pypi.org"], resolve=lambda host, port: {"127.0.0.1"})
    with pytest.raises(PermissionError, match="non-public"):
        proxy._open("pypi.org", 443)
    proxy = EgressProxy(["pypi.org"], resolve=lambda host, port: {"10.1.2.3"})
    with pytest.raises(PermissionError, match="non-public"):
        proxy._open("pypi.org", 443)
    proxy = EgressProxy(["pypi.org"], resolve=lambda host, port: {"169.254.169.254"})
    with pytest.raises(PermissionError, match="non-public"):
        proxy._open("pypi.org", 443)


@pytest.mark.parametrize(
    "text",
    ["127.0.0.1", "pypi.org:8080", "https://pypi.org", "*.npmjs.org", "localhost"],
)
def test_the_allow_list_takes_host_names_only(text):
    with pytest.raises(ValueError):
        allowed_host_list(text)
    assert allowed_host_list("PyPI.org, files.pythonhosted.org") == [
        "pypi.org",
        "files.pythonhosted.org",
    ]


def test_setup_uses_the_proxy_and_agents_do_not(jail, registry, settings):
    script = jail.worktree / "fetch.py"
    script.write_text(CLIENT)
    reason = ensure_setup(
        jail,
        f"python3 fetch.py {registry} > fetched.txt",
        ["registry.test"],
        ports=[registry],
        resolve=lambda host, _port: {"127.0.0.1"},
        address_allowed=lambda address: True,
    )
    assert reason == "", reason
    assert "-> pong" in (jail.worktree / "fetched.txt").read_text()
    # An agent's command: no proxy, no socket, no network.
    later = jail.run(["bash", "-c", f"python3 fetch.py {registry}; env"])
    assert "pong" not in later.output and "HTTPS_PROXY" not in later.output
