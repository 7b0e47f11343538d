"""The claiming broker on Redis, the production broker (see codex.core.workers.brokers
for what claims are and who uses them).

A cluster's taken jobs are a list `<queue>:@<claim>` (in the order it took
them), its started ones a hash `<queue>:@<claim>:started` (the worker's pid
and the payload, by the payload's digest). The ack id is the payload itself.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django_q.brokers.redis_broker import Redis

from codex.core.workers.brokers import ClaimingBroker

# Moves a taken job to the started hash of its cluster, if it is still there.
_START = """
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 1 then
    redis.call('HSET', KEYS[2], ARGV[2], ARGV[3] .. '|' .. ARGV[1])
    return 1
end
return 0
"""


# Moves a taken job back to the front of the queue, if it is still taken:
# whoever removes it hands it back, never twice, and never loses it between.
_HAND_BACK = """
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 1 then
    redis.call('LPUSH', KEYS[2], ARGV[1])
    return 1
end
return 0
"""


def _digest(payload: bytes) -> str:
    return hashlib.sha1(payload).hexdigest()  # noqa: S324 - a name, not a secret


class ClaimingRedis(ClaimingBroker, Redis):
    """django-q2's Redis broker with a list of taken jobs per cluster and a
    hash of started ones (a reliable queue): the ack id is the payload."""

    def __init__(self, list_key: str | None = None) -> None:
        super().__init__(list_key=list_key)
        self._new_claim()

    @property
    def claims_key(self) -> str:
        return f"{self.list_key}:claims"

    def _taken(self, claim: str) -> str:
        return f"{self.list_key}:@{claim}"

    def _started(self, claim: str) -> str:
        return f"{self.list_key}:@{claim}:started"

    def dequeue(self) -> list[tuple[Any, Any]] | None:
        """Move one job from the queue to this cluster's list (BLMOVE: taken
        and claimed in one step), waiting up to a second for one."""
        if not getattr(self, "_registered", False):
            self.connection.sadd(self.claims_key, self.claim)
            self._registered = True
        payload = self.connection.blmove(
            self.list_key, self._taken(self.claim), 1, "LEFT", "RIGHT"
        )
        if payload is None:
            return None
        return [(payload, payload)]

    def acknowledge(self, task_id: Any) -> None:
        if not task_id:
            return
        pipe = self.connection.pipeline()
        pipe.hdel(self._started(self.claim), _digest(task_id))
        pipe.lrem(self._taken(self.claim), 1, task_id)
        pipe.execute()

    def fail(self, task_id: Any) -> None:
        self.acknowledge(task_id)

    def start_claim(self, ack_id: Any, pid: int) -> bool:
        keys = [self._taken(self.claim), self._started(self.claim)]
        return bool(
            self.connection.eval(_START, 2, *keys, ack_id, _digest(ack_id), str(pid))
        )

    def started_pids(self, claim: str) -> set[int]:
        values = self.connection.hvals(self._started(claim))
        return {int(value.split(b"|", 1)[0]) for value in values}

    def hand_back(
        self,
        claim: str,
        *,
        pids: set[int] | None = None,
        unstarted: bool = True,
        counted: bool = False,
    ) -> int:
        count = 0
        started = self._started(claim)
        for field, value in self.connection.hgetall(started).items():
            pid, payload = value.split(b"|", 1)
            if pids is not None and int(pid) not in pids:
                continue
            # Whoever removes it hands it back: never twice.
            if self.connection.hdel(started, field):
                payload = self.redelivery(payload, counted)
                if payload is not None:
                    self.connection.lpush(self.list_key, payload)
                    count += 1
        if not unstarted:
            return count
        while self.connection.lmove(self._taken(claim), self.list_key, "RIGHT", "LEFT"):
            count += 1
        return count

    def unstarted(self, claim: str) -> list[Any]:
        return self.connection.lrange(self._taken(claim), 0, -1)

    def hand_back_jobs(self, claim: str, ack_ids: list[Any]) -> int:
        keys = [self._taken(claim), self.list_key]
        # The newest first, each to the front: the oldest ends up first.
        return sum(
            self.connection.eval(_HAND_BACK, 2, *keys, payload)
            for payload in reversed(ack_ids)
        )

    def known_claims(self) -> set[str]:
        return {claim.decode() for claim in self.connection.smembers(self.claims_key)}

    def forget(self, claim: str) -> None:
        self.connection.srem(self.claims_key, claim)
