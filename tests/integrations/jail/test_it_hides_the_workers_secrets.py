"""A jailed command finds none of the worker's secrets, however it looks:
its own environment, every /proc/*/environ and cmdline it can see, the
worker's files, the mirror, Codex's checkout."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-jail-test-0123456789",
    "GITHUB_TOKEN": "ghp_jailtest0123456789abcdef",
    "SECRET_KEY": "django-secret-jail-test-value",
    "DATABASE_URL": "postgres://codex:pw-jail-test@127.0.0.1/codex",
    "CODEX_FERNET_KEYS": "fernet-jail-test-key-value",
}

LOOK_EVERYWHERE = r"""
import glob, os, sys
found = []
for pattern in ("/proc/*/environ", "/proc/*/cmdline", "/proc/*/task/*/environ"):
    for path in glob.glob(pattern):
        try:
            found.append(open(path, "rb").read().decode(errors="replace"))
        except OSError as exc:
            found.append(f"{path}: {exc.strerror}")
for path in sys.argv[1:]:
    for name in [path] + glob.glob(path + "/**", recursive=True)[:2000]:
        try:
            found.append(open(name, errors="replace").read())
        except OSError as exc:
            found.append(f"{name}: {exc.strerror}")
found.append(repr(dict(os.environ)))
print("pids seen:", sorted(p for p in os.listdir("/proc") if p.isdigit()))
print("\n".join(found))
"""


def test_no_secret_of_the_worker_is_found_from_inside(jail, git_worktree, monkeypatch):
    _worktree, mirror, remote = git_worktree
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    # Another process of the worker's with the secrets in its environment
    # and on its command line (as a second worker would have them).
    sibling = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", *SECRETS.values()],
        env={**os.environ, **SECRETS},
    )
    secret_file = mirror.parent / "worker.env"
    secret_file.write_text("\n".join(f"{k}={v}" for k, v in SECRETS.items()))
    places = [
        f"/proc/{os.getpid()}/environ",
        f"/proc/{sibling.pid}/environ",
        str(secret_file),
        str(mirror),
        str(remote),
        str(settings.BASE_DIR),
        os.environ.get("HOME", "/root"),
        "/etc/shadow",
        "/var",
    ]
    try:
        result = jail.run(["python3", "-c", LOOK_EVERYWHERE, *places])
    finally:
        sibling.kill()
        sibling.wait()
    assert result.exit_code == 0, result.output
    # The command really looked: it saw its own processes and environment.
    assert "pids seen:" in result.output and "HOME" in result.output
    for name, value in SECRETS.items():
        assert value not in result.output, f"{name} leaked into the jail"
    seen = result.output.split("pids seen:", 1)[1].splitlines()[0]
    assert str(os.getpid()) not in seen.split("'")
    assert str(sibling.pid) not in seen.split("'")


def test_only_its_own_processes_are_visible(jail):
    script = (
        "ls /proc | grep -c '^[0-9]'; "
        "for p in /proc/[0-9]*; do head -c 60 $p/comm; done"
    )
    result = jail.run(["bash", "-c", script])
    assert result.exit_code == 0, result.output
    count = int(result.output.split()[0])
    # bubblewrap's init, bash, ls and grep: never the host's hundreds.
    assert count <= 6, result.output
    names = set(result.output.split()[1:])
    assert names <= {"bwrap", "bash", "ls", "grep", "head"}, names


def test_the_system_is_read_only_and_codex_is_not_there(jail):
    script = (
        "for p in /usr/bin/touched /etc/codex /workspace/../x; do "
        "touch $p 2>/dev/null && echo WROTE $p; done; "
        f"ls -A {settings.BASE_DIR} 2>&1; id -u; echo $HOME"
    )
    result = jail.run(["bash", "-c", script])
    assert "WROTE" not in result.output
    # Only the toolchain the tests bind read-only (this venv) may show there.
    listing = result.output.splitlines()[:-2]
    assert set(listing) <= {".venv"}, listing
    assert "\n1000\n/home/codex" in result.output
