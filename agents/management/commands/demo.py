"""`manage.py demo`: one feature request through all six phases against a
scripted model on loopback (agents/demo.py; `--scenario fanout`:
agents/demo_fanout.py)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from agents.demo import run_demo
from agents.demo_fanout import run_fanout_demo
from agents.isolation import own_state


class Command(BaseCommand):
    help = (
        "SCRIPTED DEMO: create a sample repository on the local forge and run one "
        "feature request through all six phases against pre-recorded model "
        "answers (no real Claude is called). Safe to run again: it resets the "
        "sample repository and adds a new task."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--root",
            type=Path,
            default=None,
            help="Where the demo keeps its files (default: CODEX_VAR_DIR/demo, "
            "beside its own database).",
        )
        parser.add_argument(
            "--scenario",
            choices=["single", "fanout"],
            default="single",
            help="single: one request through six phases (the default); "
            "fanout: a parent request split into two children whose pull "
            "requests merge.",
        )

    def handle(self, *args, **options):
        if own_state() == "demo":
            # manage.py pointed this process at var/demo/: its own database.
            call_command("migrate", verbosity=0, interactive=False)
            root = options["root"] or Path(settings.VAR_DIR)
        else:
            root = options["root"] or Path(settings.VAR_DIR) / "demo"
        if options["scenario"] == "fanout":
            fanned = run_fanout_demo(root, out=self.stdout.write)
            if fanned.parent.status != "completed":
                raise CommandError(
                    f"the demo's parent {fanned.parent.task_id} ended "
                    f"{fanned.parent.status}"
                )
            self.stdout.write(
                self.style.SUCCESS("Demo done: the children's changes are merged.")
            )
            return
        result = run_demo(root, out=self.stdout.write)
        if result.task.status != "completed":
            raise CommandError(
                f"the demo task {result.task.task_id} ended {result.task.status}"
            )
        self.stdout.write(self.style.SUCCESS("Demo done: the change is merged."))
