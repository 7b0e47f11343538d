"""manage.py import_github_project: load spec 000's `.github_project.json`."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from codex.claims.importers import (
    ImportProblems,
    import_github_project,
    read_github_project,
)
from codex.claims.management.commands._common import read_text, registered_repository


class Command(BaseCommand):
    help = (
        "Import a .github_project.json (spec 000 §3, with or without items) as "
        "the Projects v2 board of one repository. Every bad entry is reported "
        "with its line; nothing is imported unless all are good."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help="the .github_project.json file")
        parser.add_argument(
            "--repository",
            required=True,
            help="URL of the registered repository the board belongs to",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="validate only; write nothing"
        )

    def handle(self, *args, path: str, repository: str, dry_run: bool, **options):
        text = read_text(path)
        target = registered_repository(repository)
        try:
            if dry_run:
                count = len(read_github_project(text)[1])
            else:
                _, count = import_github_project(
                    target, text, by="command:import_github_project"
                )
        except ImportProblems as exc:
            raise CommandError(
                f"{path}: nothing imported; {len(exc.problems)} problem(s):\n"
                + "\n".join(exc.problems)
            ) from None
        verb = "would import" if dry_run else "imported"
        self.stdout.write(f"{verb} the board and {count} item(s) for {target}")
