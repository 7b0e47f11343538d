"""django-q2 brokers that remember which cluster took a job, and whether it started.

django-q2's pusher takes jobs from the broker into the cluster's memory queue
before a worker starts them. Its ORM broker then locks the job row for
CODEX_JOB_RETRY (20 minutes) and its Redis broker forgets the job outright, so
a cluster killed with jobs in memory used to park them for that long, or for
good. These brokers claim every job they take instead:

- taken: the job is claimed under the cluster's name (`claim`). The ORM row's
  key becomes `<queue>@<claim>`; under Redis the job moves (atomically, with
  BLMOVE) from the queue list to the cluster's list `<queue>:@<claim>`;
- started: the worker that starts it claims it again under its pid
  (`<queue>@<claim>#<pid>`; a Redis hash `<queue>:@<claim>:started`). That is
  the record of a job that is running, and of which worker runs it. A start
  that finds its claim gone (the job was handed back meanwhile) tells the job
  so (`codex.core.workers.queue.job_handed_back`);
- acknowledged: the claim goes with the job.

A job whose worker died while running it (the cluster lived on) is handed
back with the count in its package (`codex_redeliveries`); past
CODEX_JOB_REDELIVERIES it is given up instead (the apps record the failure
through codex.core.workers.hooks, and a task step blocks its task), so a job that
kills its worker every time cannot crash workers for ever.

ClaimingORM is here; ClaimingRedis, the same on Redis, in
codex.core.workers.redis_broker.
So the broker always says which jobs are waiting, which a cluster took but has
not started, and which worker is running which; `hand_back` returns a dead
cluster's (or a dead worker's) jobs to the front of the queue.
codex.core.workers.cluster_recovery decides when, from the clusters' beats.

Hooks into the cluster, all in the sentinel process: `ping()` is the first
thing a sentinel does before it forks its workers (start-up recovery runs
there, before any job is taken), and `set_stat()` is called by the sentinel's
guard loop every half second and while it stops (the beat, the sweep, the
hand-back on SIGTERM).
"""

from __future__ import annotations

import logging
import os
import sys
import uuid
from typing import Any

import psycopg
from django.conf import settings
from django.db import DatabaseError, connections
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.signals import pre_execute
from django_q.signing import SignedPackage

from codex.core.workers import hooks as worker_hooks

logger = logging.getLogger(__name__)

# Notified when a job is queued or handed back (core migration 0006).
JOBS_CHANNEL = "codex_jobs"
# How often a job was handed back because its worker died running it.
REDELIVERIES = "codex_redeliveries"
# ClaimingORM's acknowledgement on PostgreSQL: the job's row, while it is ours
# (its key this cluster's claim, or the claim of one of its workers).
ACKNOWLEDGE_SQL = (
    'DELETE FROM "django_q_ormq" WHERE "id" = %s AND starts_with("key", %s)'
)
# ClaimingORM's claim of a job by the worker starting it (any database): the
# row while its cluster holds it, its key then naming the worker too.
START_CLAIM_SQL = 'UPDATE "django_q_ormq" SET "key" = %s WHERE "id" = %s AND "key" = %s'
# ClaimingORM's take on PostgreSQL: the ready rows locked and claimed at once.
TAKE_JOBS_SQL = (
    'UPDATE "django_q_ormq" SET "key" = %s, "lock" = %s WHERE "id" IN ('
    'SELECT "id" FROM "django_q_ormq" WHERE "key" = %s AND "lock" < %s '
    'ORDER BY "id" LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING "id", "payload"'
)

# The broker of the cluster this process belongs to: set in the sentinel
# before it forks, so its workers and pusher inherit it.
_cluster_broker: ClaimingBroker | None = None
# Whether the job this worker is running was handed back before it started.
_current = {"handed_back": False}


class ClaimingBroker:
    """What both claiming brokers add to django-q2's (see the module docstring)."""

    claim: str
    keeper: Any = None

    def _new_claim(self) -> None:
        self.claim = uuid.uuid4().hex[:12]
        self.keeper = None

    def __getstate__(self) -> Any:
        return super().__getstate__(), self.claim

    def __setstate__(self, state: Any) -> None:
        base, claim = state
        super().__setstate__(base)
        self.claim, self.keeper = claim, None

    def ping(self) -> bool:
        """django-q2's ping; from a sentinel starting up, also the cluster's
        start-up: register it and recover what dead clusters left, before
        the sentinel forks its workers."""
        answer = super().ping()
        sentinel = _calling_sentinel()
        if sentinel is not None and self.keeper is None:
            from codex.core.workers.cluster_recovery import ClusterKeeper

            global _cluster_broker
            _cluster_broker = self
            self.keeper = ClusterKeeper(self, sentinel)
            self.keeper.start()
        return answer

    def set_stat(self, key: str, value: str, timeout: int) -> Any:
        """django-q2's cluster statistic; in a cluster's sentinel also its
        beat, its sweep for dead workers and clusters, and its stop."""
        try:
            return super().set_stat(key, value, timeout)
        finally:
            if self.keeper is not None:
                self.keeper.tick()

    # Claims, implemented by each broker.
    def start_claim(self, ack_id: Any, pid: int) -> bool:
        """Claim a taken job for the worker `pid` starting it; False when the
        job is no longer this cluster's (handed back)."""
        raise NotImplementedError

    def started_pids(self, claim: str) -> set[int]:
        """The pids of the workers of `claim` that are running jobs."""
        raise NotImplementedError

    def hand_back(
        self,
        claim: str,
        *,
        pids: set[int] | None = None,
        unstarted: bool = True,
        counted: bool = False,
    ) -> int:
        """Return to the queue the jobs `claim` took and has not started
        (unless `unstarted` is False), and the started ones of the workers
        `pids` (every worker's when None); returns how many. With `counted`
        the started ones count as redelivered because their worker died
        (`redelivery`), and one redelivered too often is given up."""
        raise NotImplementedError

    def unstarted(self, claim: str) -> list[Any]:
        """The ack ids of the jobs `claim` took and has not started, oldest
        take first."""
        raise NotImplementedError

    def hand_back_jobs(self, claim: str, ack_ids: list[Any]) -> int:
        """Return these of `claim`'s taken, unstarted jobs to the front of
        the queue; returns how many were still its to return."""
        raise NotImplementedError

    def redelivery(self, payload: Any, counted: bool) -> Any:
        """The payload to hand back for a started job: with one redelivery
        more when `counted`; None when it had CODEX_JOB_REDELIVERIES already,
        then the job is given up (codex.core.workers.hooks) and must be
        dropped."""
        if not counted:
            return payload
        try:
            package = SignedPackage.loads(payload)
        except Exception:  # noqa: BLE001 - a payload it cannot read goes back as is
            logger.exception("could not read a handed-back job")
            return payload
        count = int(package.get(REDELIVERIES, 0))
        limit = settings.CODEX_JOB_REDELIVERIES
        if count >= limit:
            reason = (
                f"its worker died while running it {count + 1} times (the "
                f"last {count} handed back; CODEX_JOB_REDELIVERIES is {limit})"
            )
            logger.error("giving up job %s: %s", package.get("name"), reason)
            # Dropped all the same, never looped, whatever the apps make of it.
            worker_hooks.given_up_job(package, reason)
            return None
        package[REDELIVERIES] = count + 1
        return SignedPackage.dumps(package)

    def known_claims(self) -> set[str]:
        """The claims that hold jobs in the broker."""
        raise NotImplementedError

    def forget(self, claim: str) -> None:
        """Drop what the broker keeps about a claim that holds nothing."""


def _calling_sentinel() -> Any:
    """The django-q2 Sentinel calling ping() from its start(), else None."""
    from django_q.cluster import Sentinel

    frame = sys._getframe(2)
    caller = frame.f_locals.get("self")
    return caller if isinstance(caller, Sentinel) else None


class ClaimingORM(ClaimingBroker, ORM):
    """django-q2's ORM broker with claims in the row's key."""

    def __init__(self, list_key: str | None = None) -> None:
        super().__init__(list_key=list_key)
        self._new_claim()

    def _key(self, claim: str) -> str:
        return f"{self.list_key}@{claim}"

    def dequeue(self) -> list[tuple[int, Any]] | None:
        """django-q2's dequeue, with the taken row claimed by this cluster in
        the same UPDATE that locks it."""

        # One get_connection() per poll: each call marks the connection for a
        # health check, a `SELECT 1` before the next statement.
        queue = self.get_connection()
        # Listening before the look: a job queued after it ends the wait.
        listening = self._listen_for_jobs()
        if connections[Conf.ORM].vendor == "postgresql":
            taken = self._take_in_one_statement()
        else:
            taken = []
            rows = queue.filter(key=self.list_key, lock__lt=timezone.now())
            for row in rows.order_by("id")[: Conf.BULK]:
                if queue.filter(id=row.id, key=self.list_key, lock=row.lock).update(
                    key=self._key(self.claim), lock=self.timeout(row)
                ):
                    taken.append((row.pk, row.payload))
        if taken:
            return taken
        self.wait_for_jobs(listening)
        return None

    def _take_in_one_statement(self) -> list[tuple[int, Any]]:
        """The oldest ready jobs (Conf.BULK at most) claimed for this cluster
        with one statement: the pusher runs it for every job, and the ORM's
        look-then-claim took two statements, each compiled anew. SKIP LOCKED
        leaves a row another cluster is claiming to that cluster."""
        now = timezone.now()
        with connections[Conf.ORM].cursor() as cursor:
            cursor.execute(
                TAKE_JOBS_SQL,
                [
                    self._key(self.claim),
                    self.timeout(None),
                    self.list_key,
                    now,
                    Conf.BULK,
                ],
            )
            return sorted((pk, payload) for pk, payload in cursor.fetchall())

    def wait_for_jobs(self, listening: Any = None) -> None:
        """After a poll that found nothing: on PostgreSQL, until a job is
        queued or handed back (the `codex_jobs` notification, core migration
        0006), at most CODEX_QUEUE_IDLE_SECONDS (jobs held back until a time,
        and redeliveries, notify nobody: the next look finds them); elsewhere
        Conf.POLL. An idle pusher so looks once a second instead of five
        times, and a job queued meanwhile starts at once instead of at the
        next look. `listening`: what _listen_for_jobs gave before the look."""
        from time import sleep

        raw = listening or self._listen_for_jobs()
        if raw is None:
            sleep(Conf.POLL)
            return
        try:
            for _ in raw.notifies(timeout=settings.CODEX_QUEUE_IDLE_SECONDS):
                break  # one is enough: any queued job ends the wait
            # The others came while the pusher was busy (each job queued
            # meanwhile sent one): the next look finds their jobs, and left
            # here each would end a later wait for nothing.
            for _ in raw.notifies(timeout=0):
                pass
        except (DatabaseError, psycopg.Error):
            # The connection went away: the next poll's check reconnects it.
            logger.warning("could not wait for queued jobs", exc_info=True)
            sleep(Conf.POLL)

    def _listen_for_jobs(self) -> Any:
        """The broker's psycopg connection, listening on `codex_jobs`; None on
        another database, or inside a transaction (a LISTEN there takes
        effect only at its commit: the tests' transactions roll back)."""
        connection = connections[Conf.ORM]
        if connection.vendor != "postgresql" or connection.in_atomic_block:
            return None
        try:
            return self._listening(connection)
        except (DatabaseError, psycopg.Error):
            logger.warning("could not listen for queued jobs", exc_info=True)
            return None

    def _listening(self, connection: Any) -> Any:
        """The broker connection's psycopg connection, listening on
        `codex_jobs` (again, if Django replaced it since)."""
        connection.ensure_connection()
        raw = connection.connection
        if raw is not getattr(self, "_listening_on", None):
            with connection.cursor() as cursor:
                cursor.execute(f"LISTEN {JOBS_CHANNEL}")
            self._listening_on = raw
        return raw

    def acknowledge(self, task_id: Any) -> None:
        # Only while it is ours: a job handed back is someone else's now.
        mine = {"pk": task_id, "key__startswith": self._key(self.claim)}
        try:
            # Without get_connection()'s check (a `SELECT 1`): the monitor
            # has just saved the job's result on this connection.
            if connections[Conf.ORM].vendor == "postgresql":
                # The monitor acknowledges every job: a statement it sends
                # as it is, not a queryset Django compiles for each.
                with connections[Conf.ORM].cursor() as cursor:
                    cursor.execute(ACKNOWLEDGE_SQL, [task_id, self._key(self.claim)])
            else:
                OrmQ.objects.using(Conf.ORM).filter(**mine).delete()
        except DatabaseError:
            # It saved none (a job whose success keeps no result) and the
            # connection died meanwhile, or the save failed on it: check it,
            # reconnect, and try once more.
            self.get_connection().filter(**mine).delete()

    def fail(self, task_id: Any) -> None:
        self.acknowledge(task_id)

    def start_claim(self, ack_id: Any, pid: int) -> bool:
        # Every job's start: a statement sent as it is, not one compiled anew.
        mine = self._key(self.claim)
        self.get_connection()  # closes a connection too old or broken
        with connections[Conf.ORM].cursor() as cursor:
            cursor.execute(START_CLAIM_SQL, [f"{mine}#{pid}", ack_id, mine])
            return cursor.rowcount == 1

    def started_pids(self, claim: str) -> set[int]:
        prefix = f"{self._key(claim)}#"
        keys = (
            self.get_connection()
            .filter(key__startswith=prefix)
            .values_list("key", flat=True)
            .distinct()
        )
        return {int(key[len(prefix) :]) for key in keys}

    def hand_back(
        self,
        claim: str,
        *,
        pids: set[int] | None = None,
        unstarted: bool = True,
        counted: bool = False,
    ) -> int:
        mine = self._key(claim)
        if pids is None:
            pids = self.started_pids(claim)
        count = 0
        if unstarted:
            count += (
                self.get_connection()
                .filter(key=mine)
                .update(key=self.list_key, lock=timezone.now())
            )
        started = [f"{mine}#{pid}" for pid in pids]
        for row in self.get_connection().filter(key__in=started):
            payload = self.redelivery(row.payload, counted)
            rows = self.get_connection().filter(pk=row.pk, key=row.key)
            if payload is None:
                rows.delete()
            # Whoever moves it hands it back: never twice.
            elif rows.update(key=self.list_key, lock=timezone.now(), payload=payload):
                count += 1
        return count

    def unstarted(self, claim: str) -> list[Any]:
        # A take sets the lock to the take's time plus CODEX_JOB_RETRY.
        rows = self.get_connection().filter(key=self._key(claim))
        return list(rows.order_by("lock", "id").values_list("id", flat=True))

    def hand_back_jobs(self, claim: str, ack_ids: list[Any]) -> int:
        rows = self.get_connection().filter(key=self._key(claim), id__in=ack_ids)
        return rows.update(key=self.list_key, lock=timezone.now())

    def known_claims(self) -> set[str]:
        prefix = f"{self.list_key}@"
        keys = (
            self.get_connection()
            .filter(key__startswith=prefix)
            .values_list("key", flat=True)
            .distinct()
        )
        return {key[len(prefix) :].split("#", 1)[0] for key in keys}


def _on_job_start(sender: Any, func: Any = None, task: Any = None, **kwargs) -> None:
    """In a worker, before a job runs: claim it for this worker (pre_execute)."""
    _current["handed_back"] = False
    broker = _cluster_broker
    if broker is None or not task or task.get("ack_id") is None:
        return
    try:
        _current["handed_back"] = not broker.start_claim(task["ack_id"], os.getpid())
    except Exception:  # noqa: BLE001 - without a claim the job still runs
        logger.exception("could not claim job %s at its start", task.get("name"))
        return
    if _current["handed_back"]:
        # Its row is the queue's again, perhaps taken anew by this very
        # cluster: the monitor's acknowledgement of this copy (the worker
        # hands it this dict) would delete the copy that is to run.
        task["ack_id"] = None


def job_handed_back() -> bool:
    """Whether the job this worker is about to run was handed back to the
    queue (a stopping or presumed-dead cluster) before it started: another
    worker runs it, so this one should not."""
    return _current["handed_back"]


pre_execute.connect(_on_job_start, dispatch_uid="codex_claim_job_start")
