"""manage.py import_github_project: load a `.github_project.json`
(docs/domain/claims.md#claims-import)."""

from __future__ import annotations

from codex.claims.importers import import_github_project, read_github_project
from codex.claims.management.commands._common import RepositoryImportCommand


class Command(RepositoryImportCommand):
    help = (
        "Import a .github_project.json (docs/domain/claims.md#claims-import; "
        "with or without items) as "
        "the Projects v2 board of one repository. Every bad entry is reported "
        "with its line; nothing is imported unless all are good."
    )
    file_name = ".github_project.json"
    counted = "board item(s)"

    def count_valid(self, text: str) -> int:
        return len(read_github_project(text)[1])

    def load(self, repository, text: str) -> int:
        _, count = import_github_project(
            repository, text, by="command:import_github_project"
        )
        return count
