"""A jailed command reaches no port of the host: not PostgreSQL, not Codex's
web port, not a server the test opens, on IPv4 or IPv6."""

from __future__ import annotations

import contextlib
import socket
import threading

from django.conf import settings

CONNECT = r"""
import socket, sys
for host, port in [(sys.argv[1], int(sys.argv[2])), ("127.0.0.1", 5432),
                   ("127.0.0.1", 8000), ("::1", int(sys.argv[2]))]:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family)
    s.settimeout(2)
    try:
        s.connect((host, port))
        print("CONNECTED", host, port)
    except OSError as exc:
        print("refused", host, port, exc)
try:
    socket.getaddrinfo("github.com", 443)
    print("RESOLVED")
except OSError as exc:
    print("no name resolution", exc)
"""


def test_no_port_of_the_host_is_reachable(jail):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    accepted = []

    def accept() -> None:
        server.settimeout(8)
        with contextlib.suppress(OSError):
            accepted.append(server.accept())

    listener = threading.Thread(target=accept)
    listener.start()
    # The control: from outside the jail the server answers.
    probe = socket.create_connection(("127.0.0.1", port), timeout=2)
    probe.close()
    listener.join()
    assert accepted, "the test's own server did not answer"
    accepted.clear()
    listener = threading.Thread(target=accept)
    listener.start()
    result = jail.run(["python3", "-c", CONNECT, "127.0.0.1", str(port)])
    listener.join()
    server.close()
    assert "CONNECTED" not in result.output, result.output
    assert "RESOLVED" not in result.output
    refused = [
        line for line in result.output.splitlines() if line.startswith("refused")
    ]
    assert len(refused) == 4, result.output
    assert not accepted
    if settings.IS_POSTGRESQL:
        with socket.create_connection(("127.0.0.1", 5432), timeout=2):
            pass  # reachable from the worker, not from the jail
