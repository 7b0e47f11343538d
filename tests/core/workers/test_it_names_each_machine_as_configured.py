"""Machines sharing a database tell each other apart by CODEX_MACHINE_NAME
(the host name when unset): a worker's lease, a cluster's row and an agent
instance carry it, and a cluster on another machine is known dead only by its
beat, never by a process id that means nothing here
(docs/deployment.md#machine-death)."""

from __future__ import annotations

import os
import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from codex.core.machine import machine_name
from codex.core.workers import WorkerCluster
from codex.tasks.jobs import worker_identity

pytestmark = pytest.mark.django_db

# A process id that is certainly not alive here.
GONE_PID = 4_000_000


def test_it_is_the_host_name_unless_configured(settings):
    settings.CODEX_MACHINE_NAME = ""
    assert machine_name() == socket.gethostname()
    settings.CODEX_MACHINE_NAME = "worker-b"
    assert machine_name() == "worker-b"
    assert worker_identity() == f"worker:worker-b:{os.getpid()}"


def test_a_cluster_of_this_machine_whose_process_is_gone_is_dead_at_once(settings):
    settings.CODEX_MACHINE_NAME = "worker-a"
    cluster = WorkerCluster.objects.create(claim="a1", host="worker-a", pid=GONE_PID)
    assert cluster.is_gone()


def test_a_cluster_of_another_machine_is_dead_only_once_its_beat_is_stale(settings):
    """The same pid on another machine says nothing about this one's
    processes: only the beat counts."""
    settings.CODEX_MACHINE_NAME = "worker-a"
    settings.CODEX_CLUSTER_STALE_SECONDS = 30
    cluster = WorkerCluster.objects.create(claim="b1", host="worker-b", pid=GONE_PID)
    assert not cluster.is_gone()
    later = timezone.now() + timedelta(seconds=31)
    assert cluster.is_gone(later)
