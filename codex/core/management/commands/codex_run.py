"""`manage.py codex_run`: the web console and the workers (`codex_workers`: a
django-q2 cluster forked warm, replaced when it dies), together.

Both run in the foreground as child processes; Ctrl-C (or SIGTERM) stops both,
and if either exits on its own the other is stopped too. `--prepare` first
migrates and makes the first operator account in this same process (what
`make run` does: one Python start-up fewer for each, so a second start answers
in a few seconds).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run the web console and a worker in the foreground; Ctrl-C stops both."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--addrport", default="127.0.0.1:8000")
        parser.add_argument(
            "--prepare",
            action="store_true",
            help="Migrate and make the first admin account before starting.",
        )

    def handle(self, *args, addrport: str, prepare: bool, **options) -> None:
        if prepare:
            call_command("migrate", interactive=False, verbosity=0)
            call_command("ensure_admin", stdout=self.stdout)
        manage = [sys.executable, "manage.py"]
        children = {
            "web": subprocess.Popen([*manage, "runserver", "--noreload", addrport]),
            "worker": subprocess.Popen([*manage, "codex_workers"]),
        }
        self.stdout.write(
            f"Codex console on http://{addrport}/admin/ and a worker; "
            "Ctrl-C stops both."
        )
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        # Explicit handlers: a process started in the background inherits an
        # ignored SIGINT, and Ctrl-C must work however `make run` was started.
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        while not stopping and all(child.poll() is None for child in children.values()):
            time.sleep(0.5)
        for child in children.values():
            if child.poll() is None:
                child.terminate()
        deadline = time.monotonic() + 15
        for child in children.values():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        exited = [
            f"{name} exited with {child.returncode}" for name, child in children.items()
        ]
        self.stdout.write("Stopped: " + ", ".join(exited))
