"""Where the console listens, and the links people are shown to reach it.

`make run HOST=... PORT=...` hands `codex_run` an address; the links it prints
name that host and port, never a default. An address that listens on every
interface (0.0.0.0, ::) is no place a browser can go: the links name this
machine instead, and the loopback address for a browser on it.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from django.conf import settings

DEFAULT_HOST = "127.0.0.1"
WILDCARDS = ("0.0.0.0", "::")


@dataclass(frozen=True)
class Address:
    """A host and a port to listen on (IPv6 hosts without brackets)."""

    host: str
    port: int

    @classmethod
    def parse(cls, addrport: str) -> Address:
        """`host:port`, `[v6]:port` or a bare `port`, as runserver takes it;
        ValueError with the reason otherwise."""
        text = addrport.strip()
        host, sep, port = text.rpartition(":")
        if not sep:
            host, port = DEFAULT_HOST, text
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(
                f"{addrport!r} is not an address to listen on: the port must be "
                "a number from 1 to 65535 (make run PORT=8000)"
            )
        if not host:
            raise ValueError(f"{addrport!r} names no host (make run HOST=127.0.0.1)")
        return cls(host, int(port))

    def for_runserver(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def base_urls(self) -> list[str]:
        """The console's base URLs as a browser reaches them, best first."""
        if self.host in WILDCARDS:
            hosts = [socket.gethostname(), "127.0.0.1"]
        else:
            hosts = [self.host]
        return [
            f"http://{f'[{host}]' if ':' in host else host}:{self.port}"
            for host in hosts
        ]


def console_links(address: Address) -> str:
    """What `make run` prints: the console's admin URL on that host and port
    (on every interface: by this machine's name, and on the loopback)."""
    return " or ".join(f"{base}/admin/" for base in address.base_urls())


def console_base_url() -> str:
    """The console's base URL for links printed outside a request (the demo,
    the management commands): CODEX_PUBLIC_URL when set, else where `make
    run` listens (CODEX_CONSOLE_ADDRESS, which it sets from HOST and PORT),
    else the default address."""
    public = (getattr(settings, "CODEX_PUBLIC_URL", "") or "").rstrip("/")
    if public:
        return public
    configured = getattr(settings, "CODEX_CONSOLE_ADDRESS", "") or ""
    try:
        address = Address.parse(configured or f"{DEFAULT_HOST}:8000")
    except ValueError:
        address = Address(DEFAULT_HOST, 8000)
    return address.base_urls()[0]
