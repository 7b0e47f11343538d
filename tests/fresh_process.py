"""Running a script in a fresh Python process, for tests of what a new
process (a forked worker, a first request) imports, builds or collects."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings


def last_line_of(script: str, *args: str) -> str:
    """Run `script` with `args` in a new interpreter on the embedded defaults
    (a DATABASE_URL without keys would be production), from the repository's
    root; the last line it printed. Fails the test when it fails."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["DJANGO_SETTINGS_MODULE"] = "codex.settings"
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=settings.BASE_DIR,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]
