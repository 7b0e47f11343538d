"""manage.py import_issue_claims: load spec 000's `.issue_claims.json`."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from codex.claims.importers import (
    ImportProblems,
    import_issue_claims,
    read_issue_claims,
)
from codex.claims.management.commands._common import read_text, registered_repository


class Command(BaseCommand):
    help = (
        "Import a .issue_claims.json (spec 000 §1, with or without failed_at, "
        "failure_count and history) for one repository. Every bad entry is "
        "reported with its line; nothing is imported unless all are good."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help="the .issue_claims.json file")
        parser.add_argument(
            "--repository",
            required=True,
            help="URL of the registered repository the issues belong to",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="validate only; write nothing"
        )

    def handle(self, *args, path: str, repository: str, dry_run: bool, **options):
        text = read_text(path)
        target = registered_repository(repository)
        try:
            if dry_run:
                count = len(read_issue_claims(text))
            else:
                count = import_issue_claims(
                    target, text, by="command:import_issue_claims"
                )
        except ImportProblems as exc:
            raise CommandError(
                f"{path}: nothing imported; {len(exc.problems)} problem(s):\n"
                + "\n".join(exc.problems)
            ) from None
        verb = "would import" if dry_run else "imported"
        self.stdout.write(f"{verb} {count} claim(s) for {target}")
