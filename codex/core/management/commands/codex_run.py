"""`manage.py codex_run`: the web console and the workers (`codex_workers`: a
django-q2 cluster forked warm, replaced when it dies), together.

Both run in the foreground as child processes; Ctrl-C (or SIGTERM) stops both,
and if either exits on its own the other is stopped too, and the command exits
with that child's status. The address is checked first: a port already taken
stops it at once with a non-zero status and the `PORT=` hint, before anything
is migrated or started. `--prepare` then migrates and makes the first operator
account in this same process (what `make run` does: one Python start-up fewer
for each, so a second start answers in a few seconds).
"""

from __future__ import annotations

import errno
import signal
import socket
import subprocess
import sys
import time

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from codex.core.addresses import Address, console_links


class Command(BaseCommand):
    help = "Run the web console and a worker in the foreground; Ctrl-C stops both."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addrport", default="127.0.0.1:8000")
        parser.add_argument(
            "--prepare",
            action="store_true",
            help="Migrate and make the first admin account before starting.",
        )

    def handle(self, *args, addrport: str, prepare: bool, **options) -> None:
        try:
            address = Address.parse(addrport)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        check_free(address)
        if prepare:
            call_command("migrate", interactive=False, verbosity=0)
            call_command("ensure_admin", stdout=self.stdout)
        manage = [sys.executable, "manage.py"]
        children = {
            "web": subprocess.Popen(
                [*manage, "runserver", "--noreload", address.for_runserver()]
            ),
            "worker": subprocess.Popen([*manage, "codex_workers"]),
        }
        self.stdout.write(
            f"Codex console on {console_links(address)} and a worker; "
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
        # Which child ended by itself (and so why everything stops), if any.
        ended = [
            (name, child.returncode)
            for name, child in children.items()
            if child.poll() is not None
        ]
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
        if not stopping and ended:
            name, code = ended[0]
            # A child that stopped on its own is a failure to report, even
            # when it said nothing (exit 0): `make run` must not look fine.
            raise CommandError(
                f"the {name} stopped by itself (exit status {code})",
                returncode=code if code and code > 0 else 1,
            )


def check_free(address: Address) -> None:
    """CommandError (status 1) with the `PORT=` hint when the console's
    address cannot be listened on: taken, or not this machine's."""
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    probe = socket.socket(family, socket.SOCK_STREAM)
    # As runserver binds (SO_REUSEADDR): a port in TIME_WAIT is free for it.
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind((address.host, address.port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise CommandError(
                f"port {address.port} on {address.host} is already in use (another "
                f"`make run`?): stop it, or choose another port: "
                f"make run PORT={address.port + 1}",
                returncode=1,
            ) from None
        raise CommandError(
            f"cannot listen on {address.host}:{address.port}: {exc.strerror}; "
            "choose another address: make run HOST=127.0.0.1 PORT=8000",
            returncode=1,
        ) from None
    finally:
        probe.close()
