"""What the import commands share: reading the file and finding the repository."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

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
