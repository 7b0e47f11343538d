"""What the import commands share: reading the file and finding the repository."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from codex.claims.importers import ImportProblems
from codex.core.imports import UnreadableFile, read_import_file
from codex.repositories.models import Repository


def read_text(path: str) -> str:
    """The file's text, or a CommandError saying why it cannot be read."""
    try:
        return read_import_file(path)
    except UnreadableFile as exc:
        raise CommandError(f"{path}: cannot read the file: {exc}") from None


def registered_repository(url: str) -> Repository:
    """The registered repository with this URL; imports never register one."""
    try:
        repository = Repository.objects.for_url(url).first()
    except ValidationError as exc:
        raise CommandError(f"--repository: {' '.join(exc.messages)}") from None
    if repository is None:
        raise CommandError(
            f"--repository: {url} is not registered; add it in the admin first"
        )
    return repository


class RepositoryImportCommand(BaseCommand):
    """An import of one file for one registered repository, all or nothing.

    Subclasses name the file (`file_name`), say what a count counts
    (`counted`), and implement `count_valid` (validate only: the count) and
    `load` (import: the count)."""

    file_name = ""
    counted = "entries"

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help=f"the {self.file_name} file")
        parser.add_argument(
            "--repository",
            required=True,
            help="URL of the registered repository the file belongs to",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="validate only; write nothing"
        )

    def count_valid(self, text: str) -> int:
        raise NotImplementedError

    def load(self, repository: Repository, text: str) -> int:
        raise NotImplementedError

    def handle(self, *args, path: str, repository: str, dry_run: bool, **options):
        text = read_text(path)
        target = registered_repository(repository)
        try:
            count = self.count_valid(text) if dry_run else self.load(target, text)
        except ImportProblems as exc:
            raise CommandError(
                f"{path}: nothing imported; {len(exc.problems)} problem(s):\n"
                + "\n".join(exc.problems)
            ) from None
        verb = "would import" if dry_run else "imported"
        self.stdout.write(f"{verb} {count} {self.counted} for {target}")
