"""Fixtures for notification tests: a webhook receiver on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class Hook(BaseHTTPRequestHandler):
    """Answers by path: /ok 200, /busy 429 with Retry-After, /broken 500,
    /gone 404. Records each request's path, headers and JSON body."""

    received: list[dict] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        Hook.received.append(
            {
                "path": self.path,
                "headers": dict(self.headers.items()),
                "json": json.loads(self.rfile.read(length) or b"null"),
            }
        )
        status, headers, body = {
            "/ok": (200, {}, b'{"ok": true}'),
            "/busy": (429, {"Retry-After": "120"}, b'{"message": "slow down"}'),
            "/broken": (500, {}, b"upstream exploded"),
            "/gone": (404, {}, b'{"message": "no such hook"}'),
        }[self.path]
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:  # keep test output quiet
        pass


@pytest.fixture
def hook() -> Iterator[str]:
    """A webhook receiver on 127.0.0.1; yields its base URL."""
    Hook.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
