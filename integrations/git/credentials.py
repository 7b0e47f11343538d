"""Credentials for git over HTTPS, bound to one origin by construction.

A credential is handed to git as an `http.<origin>/.extraheader` through
GIT_CONFIG_* (never argv, URLs or files; see runner.py), where `<origin>` is
the origin the credential belongs to, given by the caller from configuration,
never read from a remote URL. Two locks, each enough on its own:

- `header_env` returns no credential unless the remote git will talk to has
  exactly that origin (scheme, host and port, after normalising the default
  port and the host's case); a remote elsewhere (another host, a loopback
  address, plain http, another port) gets only GIT_TERMINAL_PROMPT=0;
- git applies an `http.<url>.*` setting only to URLs that match it (same
  scheme, host and port), so even a header that reached git for another remote
  would not be sent there. Since curl 7.58 a custom Authorization header is not
  sent on to another host after a redirect either.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

DEFAULT_PORTS = {"https": 443, "http": 80}
# Fail instead of waiting for a password on a terminal nobody reads.
NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0"}


class Origin(NamedTuple):
    """A web origin: scheme, host (lowercase) and port (the default filled in)."""

    scheme: str
    host: str
    port: int

    def __str__(self) -> str:
        port = "" if DEFAULT_PORTS.get(self.scheme) == self.port else f":{self.port}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}{port}"


def origin_of(url: str) -> Origin | None:
    """The origin of an http(s) URL, or None for anything else (file paths,
    ssh, a URL that does not parse, user info in it)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a bad port or IPv6 literal
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or "@" in parts.netloc:
        return None
    return Origin(scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme])


def header_env(remote_url: str, origin: Origin, header: str) -> dict[str, str]:
    """Environment for a git that talks to `remote_url`: `header` (e.g.
    "Authorization: basic ...") scoped to `origin`, only when `remote_url` is
    at exactly that origin; otherwise no credential at all."""
    if origin_of(remote_url) != origin:
        return dict(NO_PROMPT)
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"http.{origin}/.extraheader",
        "GIT_CONFIG_VALUE_0": header,
        **NO_PROMPT,
    }
