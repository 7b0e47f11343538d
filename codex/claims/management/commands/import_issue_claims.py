"""manage.py import_issue_claims: load an `.issue_claims.json`
(docs/domain/claims.md#claims-import)."""

from __future__ import annotations

from codex.claims.importers import import_issue_claims, read_issue_claims
from codex.claims.management.commands._common import RepositoryImportCommand


class Command(RepositoryImportCommand):
    help = (
        "Import a .issue_claims.json (docs/domain/claims.md#claims-import; "
        "with or without failed_at, "
        "failure_count and history) for one repository. Every bad entry is "
        "reported with its line; nothing is imported unless all are good."
    )
    file_name = ".issue_claims.json"
    counted = "claim(s)"

    def count_valid(self, text: str) -> int:
        return len(read_issue_claims(text))

    def load(self, repository, text: str) -> int:
        return import_issue_claims(repository, text, by="command:import_issue_claims")
