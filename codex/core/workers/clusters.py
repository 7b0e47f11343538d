"""The worker clusters that are running now, as the database knows them.

Each `manage.py qcluster` registers itself at start-up and stamps `beat_at`
every CODEX_CLUSTER_BEAT_SECONDS from its sentinel (codex.core.workers.brokers); it
also reports what it finds of its own machine (`health`: the command jail, the
model key) at start-up and every CODEX_CLUSTER_HEALTH_SECONDS. The
jobs a cluster has taken from the broker are claimed under its `claim` (see
codex.core.workers.brokers), so when a cluster stops beating, or its process is gone
from the machine it ran on, any other cluster hands those jobs back to the
queue at once (codex.core.workers.cluster_recovery).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from codex.core.machine import machine_name


class WorkerClusterQuerySet(models.QuerySet):
    def beating(self, now: datetime | None = None) -> WorkerClusterQuerySet:
        """Clusters whose beat is fresh (within CODEX_CLUSTER_STALE_SECONDS)
        and that are not stopping: those that take jobs now."""
        now = now or timezone.now()
        stale = timedelta(seconds=settings.CODEX_CLUSTER_STALE_SECONDS)
        return self.filter(beat_at__gte=now - stale, stopping=False)


class WorkerCluster(models.Model):
    """One running worker cluster: where it runs, when it last beat, whether
    it is stopping (a SIGTERM: it hands its jobs back), and what it reported
    of its machine (`health`, from CODEX_WORKER_HEALTH, at `health_at`)."""

    claim = models.CharField(max_length=32, unique=True)
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    beat_at = models.DateTimeField(default=timezone.now)
    stopping = models.BooleanField(default=False)
    health = models.JSONField(default=dict, blank=True)
    health_at = models.DateTimeField(null=True, blank=True)

    objects = WorkerClusterQuerySet.as_manager()

    class Meta:
        app_label = "core"

    def __str__(self) -> str:
        return f"cluster {self.claim} on {self.host} (pid {self.pid})"

    def is_gone(self, now: datetime | None = None) -> bool:
        """Whether this cluster is dead: its beat is older than
        CODEX_CLUSTER_STALE_SECONDS, or it ran on this machine and its
        process no longer exists (known at once, without waiting)."""
        now = now or timezone.now()
        stale = timedelta(seconds=settings.CODEX_CLUSTER_STALE_SECONDS)
        if self.beat_at < now - stale:
            return True
        return self.host == machine_name() and not process_exists(self.pid)


def process_exists(pid: int) -> bool:
    """Whether a process `pid` exists on this machine and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            # The state follows the command name, which is in parentheses.
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
