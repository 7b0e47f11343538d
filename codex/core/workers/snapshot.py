"""What the job queue holds now, for monitoring (/metrics, /healthz/workers).

Read from the claiming brokers' own records (codex.core.workers.brokers): the jobs
waiting for a cluster to take them, when the oldest of them was queued, and
for each cluster's claim the jobs it took and those its workers run. A fixed
number of statements whatever the queue holds: three on the ORM broker, one
pipeline and one more per cluster on Redis (no database statement).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count
from django.utils import timezone
from django_q.signing import SignedPackage


@dataclass(frozen=True)
class QueueSnapshot:
    """Jobs waiting (ready to take: a job held back until a later time is
    not counted), the enqueue time of the oldest waiting one, and by claim
    the jobs taken (not started yet) and running."""

    waiting: int = 0
    oldest_queued_at: datetime | None = None
    taken: dict[str, int] = field(default_factory=dict)
    running: dict[str, int] = field(default_factory=dict)

    def oldest_age_seconds(self, now: datetime | None = None) -> float:
        if self.oldest_queued_at is None:
            return 0.0
        now = now or timezone.now()
        return max(0.0, (now - self.oldest_queued_at).total_seconds())


def queue_snapshot(broker: Any = None) -> QueueSnapshot:
    """The queue of `broker` (the configured one by default)."""
    from codex.core.workers.brokers import ClaimingORM
    from codex.core.workers.redis_broker import ClaimingRedis

    if broker is None:
        from django_q.brokers import get_broker

        broker = get_broker()
    if isinstance(broker, ClaimingRedis):
        return _redis_snapshot(broker)
    if isinstance(broker, ClaimingORM):
        return _orm_snapshot(broker)
    return QueueSnapshot()


def _queued_at(payload: Any) -> datetime | None:
    """When a job was queued, from its signed package (django-q stamps
    `started` at enqueue); None when it cannot be read."""
    try:
        started = SignedPackage.loads(payload).get("started")
    except Exception:  # noqa: BLE001 - a job it cannot read has no known age
        return None
    return started if isinstance(started, datetime) else None


def _orm_snapshot(broker: Any) -> QueueSnapshot:
    from django_q.conf import Conf
    from django_q.models import OrmQ

    # Not the broker's get_connection(): that one closes old connections, a
    # cluster's habit, not a request's.
    rows = OrmQ.objects.using(Conf.ORM)
    ready = rows.filter(key=broker.list_key, lock__lte=timezone.now())
    waiting = ready.aggregate(n=Count("id"))["n"]
    oldest = ready.order_by("lock", "id").values_list("payload", flat=True).first()
    prefix = f"{broker.list_key}@"
    claimed = rows.filter(key__startswith=prefix).values_list("key", flat=True)
    taken: Counter[str] = Counter()
    running: Counter[str] = Counter()
    for key in claimed:
        claim, started, _ = key[len(prefix) :].partition("#")
        (running if started else taken)[claim] += 1
    return QueueSnapshot(
        waiting=waiting,
        oldest_queued_at=_queued_at(oldest) if oldest else None,
        taken=dict(taken),
        running=dict(running),
    )


def _redis_snapshot(broker: Any) -> QueueSnapshot:
    pipe = broker.connection.pipeline()
    pipe.llen(broker.list_key)
    # django-q pushes on the right and a cluster takes from the left: the
    # oldest job waits at index 0.
    pipe.lindex(broker.list_key, 0)
    pipe.smembers(broker.claims_key)
    waiting, oldest, members = pipe.execute()
    claims = sorted(member.decode() for member in members)
    taken, running = {}, {}
    if claims:
        pipe = broker.connection.pipeline()
        for claim in claims:
            pipe.llen(broker._taken(claim))
            pipe.hlen(broker._started(claim))
        counts = pipe.execute()
        for index, claim in enumerate(claims):
            taken_count, running_count = counts[2 * index], counts[2 * index + 1]
            if taken_count:
                taken[claim] = taken_count
            if running_count:
                running[claim] = running_count
    return QueueSnapshot(
        waiting=int(waiting),
        oldest_queued_at=_queued_at(oldest) if oldest else None,
        taken=taken,
        running=running,
    )
