"""A body too large is 413 whatever its framing: a signed chunked body (no
Content-Length) is read to the limit, not taken for an empty one and
answered 401; under gunicorn as in production, and with the environment
gunicorn gives a chunked request."""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from codex.webhooks.models import WebhookDelivery
from codex.webhooks.signature import sign
from tests.webhooks.conftest import SECRET, URL

ROOT = Path(__file__).resolve().parents[2]
TEN_MB = 10 * 1024 * 1024


def chunked(client, body: bytes, *, terminated: bool = True, event: str = "ping"):
    """POST `body` as gunicorn hands a chunked request to Django: no
    Content-Length, the de-chunked body on wsgi.input, which ends there."""
    environ = {
        "CONTENT_LENGTH": "",
        "HTTP_TRANSFER_ENCODING": "chunked",
        "wsgi.input": io.BytesIO(body),
        "HTTP_X_GITHUB_EVENT": event,
        "HTTP_X_GITHUB_DELIVERY": "chunked-1",
        "HTTP_X_HUB_SIGNATURE_256": sign(body, SECRET),
    }
    if terminated:
        environ["wsgi.input_terminated"] = True
    return client.generic("POST", URL, b"", content_type="application/json", **environ)


@pytest.mark.django_db
def test_a_signed_chunked_body_over_the_limit_is_413(client):
    body = json.dumps({"zen": "x" * TEN_MB}).encode()
    response = chunked(client, body)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert not WebhookDelivery.objects.exists()


@pytest.mark.django_db
def test_a_signed_chunked_body_under_the_limit_is_read_and_accepted(client):
    response = chunked(client, json.dumps({"zen": "small"}).encode())
    assert response.status_code == 200, response.content


@pytest.mark.django_db
def test_a_chunked_body_the_server_does_not_frame_is_411(client):
    response = chunked(client, b"{}", terminated=False)
    assert response.status_code == 411


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def gunicorn(tmp_path):
    """`gunicorn codex.wsgi` as in production (the 413 comes before any query,
    so its database is an empty SQLite file)."""
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "codex.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECRET_KEY": "chunked-webhook-test-" + "k" * 40,
        "CODEX_FERNET_KEYS": Fernet.generate_key().decode(),
        "GITHUB_WEBHOOK_SECRET": SECRET,
    }
    log = open(tmp_path / "gunicorn.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "codex.wsgi", "--no-control-socket"]
        + ["--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert process.poll() is None, (tmp_path / "gunicorn.log").read_text()
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_gunicorn_answers_413_to_a_signed_chunked_body_of_10_mb(gunicorn):
    body = json.dumps({"zen": "x" * TEN_MB}).encode()
    connection = http.client.HTTPConnection("127.0.0.1", gunicorn, timeout=60)
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "ping",
        "X-GitHub-Delivery": "chunked-live",
        "X-Hub-Signature-256": sign(body, SECRET),
    }
    pieces = (body[start : start + 65536] for start in range(0, len(body), 65536))
    # The server answers, and may close, before the whole body is sent.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        connection.request("POST", URL, pieces, headers, encode_chunked=True)
    response = connection.getresponse()
    assert response.status == 413
    assert json.loads(response.read())["error"]["code"] == "payload_too_large"
