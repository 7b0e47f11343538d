"""`manage.py codex_workers`: worker clusters forked warm, replaced when one
dies (codex.core.workers.supervisor). `qcluster` still runs one cluster by itself."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from codex.core.workers.supervisor import ClusterSupervisor


class Command(BaseCommand):
    help = (
        "Run worker clusters (CODEX_WORKERS processes each) forked from one "
        "prepared process, and start another at once when one dies."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--clusters",
            type=int,
            default=1,
            choices=range(1, 17),
            metavar="N",
            help="How many clusters to keep running (1-16; default 1).",
        )

    def handle(self, *args, clusters: int, **options) -> None:
        ClusterSupervisor(clusters).run()
