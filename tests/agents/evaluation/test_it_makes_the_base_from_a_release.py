"""A case's base repository: the release (here an archive, or a registry on
loopback) with the break applied, as the only commit of main; the reference
patch and the hidden tests are what turns it back into the release."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agents.demo import git
from agents.evaluation import sources
from agents.evaluation.cases import load_suite
from agents.evaluation.sources import SourceError, fetch_release, prepare, unpack
from tests.agents.evaluation.conftest import MINI, case_toml, make_release


def test_main_holds_the_base_alone(mini_suite, tmp_path):
    (case,) = load_suite(mini_suite)

    prepared = prepare(case, tmp_path / "remotes", tmp_path / "cache")

    bare = prepared.bare
    assert git("rev-list", "--count", "--all", cwd=bare).strip() == "1"
    assert git("rev-parse", "main", cwd=bare).strip() == prepared.base_sha
    mini = git("show", "main:mini.py", cwd=bare)
    assert "def add" in mini and "mul" not in mini
    assert "test_mul" not in git("show", "main:tests/test_mini.py", cwd=bare)
    # The release's own mini.py (with mul) is nowhere in the repository.
    data = MINI["mini.py"].encode()
    released = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    objects = git("cat-file", "--batch-all-objects", "--batch-check", cwd=bare)
    assert released not in objects


def test_the_reference_and_the_hidden_tests_restore_the_release(mini_suite, tmp_path):
    (case,) = load_suite(mini_suite)

    prepared = prepare(case, tmp_path / "remotes", tmp_path / "cache")

    assert "a/mini.py" in prepared.patch and "test_mini" not in prepared.patch
    assert "a/tests/test_mini.py" in prepared.test_patch
    assert "mini.py" not in prepared.test_patch.replace("test_mini.py", "")
    assert prepared.gold_files == {"mini.py": MINI["mini.py"]}


def test_an_archive_with_another_sha256_is_refused(tmp_path):
    folder = tmp_path / "suite"
    make_release(folder)
    (folder / "case.toml").write_text(case_toml("0" * 64))
    (case,) = load_suite(folder)

    with pytest.raises(SourceError, match="pins 0000"):
        prepare(case, tmp_path / "remotes", tmp_path / "cache")


def test_a_break_that_does_not_apply_is_reported(tmp_path):
    folder = tmp_path / "suite"
    _, sha256 = make_release(folder)
    wrong = "--- a/mini.py\n+++ b/mini.py\n@@ -1,1 +1,1 @@\n-def nope():\n+def x():\n"
    (folder / "case.toml").write_text(case_toml(sha256, break_patch=wrong))
    (case,) = load_suite(folder)

    with pytest.raises(SourceError, match="its break does not apply"):
        prepare(case, tmp_path / "remotes", tmp_path / "cache")


def test_unpacking_keeps_every_member_inside(tmp_path):
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("pkg/ok.py", "../outside.py", "/etc/absolute.py"):
            info = tarfile.TarInfo(name)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"x\n"))
        link = tarfile.TarInfo("pkg/link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)

    unpack(archive, tmp_path / "out")

    assert (tmp_path / "out" / "pkg" / "ok.py").read_text() == "x\n"
    assert not (tmp_path / "outside.py").exists()
    assert not (tmp_path / "out" / "pkg" / "link").exists()
    assert [p.name for p in (tmp_path / "out").rglob("*") if p.is_file()] == ["ok.py"]


# -- registries on loopback ---------------------------------------------------------


@pytest.fixture
def registry(monkeypatch, tmp_path):
    """PyPI's simple index (JSON) and npm's metadata on 127.0.0.1, serving
    mini-1.0.tar.gz; the requests it answered."""
    archive, sha256 = make_release(tmp_path / "files")
    data = archive.read_bytes()
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            seen.append(self.path)
            if self.path == "/simple/mini/":
                files = [
                    {
                        "filename": "mini-1.0.tar.gz",
                        "url": "/files/mini-1.0.tar.gz",
                        "hashes": {"sha256": sha256},
                    }
                ]
                body = json.dumps({"files": files}).encode()
            elif self.path == "/mini/1.0":
                dist = {
                    "tarball": f"{url}/files/mini-1.0.tar.gz",
                    "integrity": integrity,
                }
                body = json.dumps({"dist": dist}).encode()
            elif self.path == "/files/mini-1.0.tar.gz":
                body = data
            else:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(sources, "PYPI_URL", url)
    monkeypatch.setattr(sources, "NPM_REGISTRY", url)
    try:
        yield sha256, seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("kind", ["pypi", "npm"])
def test_a_release_is_downloaded_once_and_kept_by_its_sha256(registry, tmp_path, kind):
    sha256, seen = registry

    first = fetch_release(kind, "mini", "1.0", sha256, tmp_path / "cache")
    again = fetch_release(kind, "mini", "1.0", sha256, tmp_path / "cache")

    assert first == again and first.parent.name == sha256
    assert hashlib.sha256(first.read_bytes()).hexdigest() == sha256
    assert seen.count("/files/mini-1.0.tar.gz") == 1


def test_a_release_file_whose_sha256_differs_from_the_pin_is_refused(
    registry, tmp_path
):
    with pytest.raises(SourceError, match="pins 1111"):
        fetch_release("npm", "mini", "1.0", "1" * 64, tmp_path / "cache")
    with pytest.raises(SourceError, match="no file of mini with sha256"):
        fetch_release("pypi", "mini", "1.0", "1" * 64, tmp_path / "cache")
    assert not list((tmp_path / "cache").rglob("*.tar.gz"))
