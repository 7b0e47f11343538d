"""Import session logs (logs/session_*.jsonl) as agent runs
(docs/domain/fleet.md#session-logs)."""

from __future__ import annotations

import glob
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from codex.fleet.models import AgentRun
from codex.fleet.session_logs import read_session_logs

ACTOR = "import:session_logs"


class Command(BaseCommand):
    help = (
        "Import session logs (JSON Lines, one SessionOutcome a line) as agent "
        "runs. Every bad line is reported and nothing is imported unless all are "
        "good; sessions imported before are skipped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "paths",
            nargs="+",
            help="Files or glob patterns, e.g. 'logs/session_*.jsonl'.",
        )

    def handle(self, *args, paths: list[str], **options) -> None:
        files: list[Path] = []
        unmatched: list[str] = []
        for pattern in paths:
            matches = sorted(glob.glob(pattern, recursive=True)) or (
                [pattern] if _reachable(pattern) else []
            )
            if not matches:
                unmatched.append(f"{pattern}: no such file")
            files.extend(Path(m) for m in matches if Path(m) not in files)
        lines, errors = read_session_logs(files)
        errors = unmatched + errors
        if errors:
            raise CommandError(
                f"nothing imported; {len(errors)} problem(s):\n" + "\n".join(errors)
            )
        known = set(
            AgentRun.objects.filter(
                session_id__in=[line.run.session_id for line in lines]
            ).values_list("session_id", flat=True)
        )
        new = [line for line in lines if line.run.session_id not in known]
        with transaction.atomic():
            for line in new:
                line.run.record(
                    by=ACTOR,
                    reason=f"imported from {line.location}",
                    field="status",
                    target=line.run.status,
                )
                line.run.save()
        self.stdout.write(
            f"Imported {len(new)} run(s) from {len(files)} file(s); "
            f"{len(lines) - len(new)} already imported."
        )


def _reachable(path: str) -> bool:
    """The path exists, or cannot even be looked at: reading it says why."""
    try:
        return Path(path).exists()
    except OSError:
        return True
