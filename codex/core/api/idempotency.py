"""Idempotency-Key for every API POST that creates or acts
(docs/domain/concurrency.md#idempotency-key).

A client that did not hear the answer to a POST sends it again with the same
`Idempotency-Key` header and gets the first answer back (header
`Idempotent-Replayed: true`) instead of a second task, a second retry or a second
resolution. The same key with another request (method, path or body) is a 422
`idempotency_key_reused`. Keys are per user and count for
CODEX_IDEMPOTENCY_TTL_HOURS (24) hours; `prune_idempotency_records` deletes the
older ones.

Only successful (2xx) answers are kept: an error changed nothing, so sending the
request again with the same key simply tries again.

The key is claimed by inserting its record in the transaction that runs the view,
so two concurrent requests with one key cannot both act: on PostgreSQL the second
insert waits for the first transaction and then finds its answer; SQLite takes
the write lock when the transaction begins.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http.request import RawPostDataException
from django.utils import timezone
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from codex.core.api.errors import Unprocessable
from codex.core.api.idempotency_record import IdempotencyRecord

HEADER = "Idempotency-Key"
KEY_MAX_LENGTH = 200
DEFAULT_TTL_HOURS = 24


def ttl() -> timedelta:
    return timedelta(
        hours=getattr(settings, "CODEX_IDEMPOTENCY_TTL_HOURS", DEFAULT_TTL_HOURS)
    )


def read_key(request: Request) -> str | None:
    """The Idempotency-Key header, or None; 400 when it is malformed."""
    key = request.headers.get(HEADER)
    if key is None:
        return None
    key = key.strip()
    if not key or len(key) > KEY_MAX_LENGTH or not key.isprintable():
        raise ValidationError(
            {HEADER: [f"Must be 1 to {KEY_MAX_LENGTH} printable characters."]}
        )
    return key


def request_hash(request: Request) -> str:
    """SHA-256 of method, path (with query) and body: what "the same request" is."""
    try:
        body = request.body
    except RawPostDataException:
        # The body was read as a stream (a multipart form): hash what it said.
        body = json.dumps(request.data, sort_keys=True, default=str).encode()
    digest = hashlib.sha256()
    for part in (request.method.encode(), request.get_full_path().encode(), body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def idempotent(handler: Callable[..., Response]) -> Callable[..., Response]:
    """Decorate an APIView's `post` so that it honours Idempotency-Key."""

    @functools.wraps(handler)
    def wrapper(view, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = read_key(request)
        if key is None:
            return handler(view, request, *args, **kwargs)
        return run_once(request, key, lambda: handler(view, request, *args, **kwargs))

    wrapper.idempotent = True  # type: ignore[attr-defined]  # checked by a test
    return wrapper


def _locked_record(user, key: str) -> IdempotencyRecord | None:
    return (
        IdempotencyRecord.objects.select_for_update().filter(user=user, key=key).first()
    )


def _claim(request: Request, key: str, fingerprint: str) -> IdempotencyRecord:
    """Insert the key's record: raises IntegrityError when the key is taken."""
    return IdempotencyRecord.objects.create(
        user=request.user,
        key=key,
        request_hash=fingerprint,
        method=request.method,
        path=request.get_full_path()[:500],
        response_status=0,
    )


def run_once(request: Request, key: str, act: Callable[[], Response]) -> Response:
    """Replay the stored answer to (user, key), or act and store the answer.

    A new key (the usual case) costs one INSERT and one UPDATE in the view's
    transaction: the INSERT is the claim, tried first rather than after a
    SELECT so that the common path needs neither a lookup nor a savepoint. When
    it fails the key is taken: that transaction is rolled back (nothing was
    done in it yet) and a second one replays the answer, or reclaims the key
    if its record has expired.
    """
    fingerprint = request_hash(request)
    claimed = False
    try:
        with transaction.atomic():
            record = _claim(request, key, fingerprint)
            claimed = True
            return _act_and_keep(record, act)
    except IntegrityError:
        if claimed:  # raised by the view itself, not by the claim
            raise
    with transaction.atomic():
        # On PostgreSQL the failed INSERT waited for a concurrent claimant to
        # commit, so its record (and answer) is there now; the lock serialises
        # two requests that both find it expired.
        record = _locked_record(request.user, key)
        if record is None:  # pragma: no cover - it was pruned meanwhile
            return run_once(request, key, act)
        if record.created_at >= timezone.now() - ttl():
            return _replay(record, fingerprint)
        record.delete()  # expired: the key is free again
        return _act_and_keep(_claim(request, key, fingerprint), act)


def _act_and_keep(record: IdempotencyRecord, act: Callable[[], Response]) -> Response:
    """Run the view in the claiming transaction and store a 2xx answer."""
    response = act()
    if not isinstance(response, Response) or not (200 <= response.status_code < 300):
        transaction.set_rollback(True)  # errors are not kept: try again
        return response
    record.response_status = response.status_code
    record.response_body = json.loads(JSONRenderer().render(response.data) or "null")
    record.response_location = response.get("Location", "")[:500]
    record.save(update_fields=["response_status", "response_body", "response_location"])
    return response


def _replay(record: IdempotencyRecord, fingerprint: str) -> Response:
    if record.request_hash != fingerprint:
        answered = f" ({record.response_location})" if record.response_location else ""
        raise Unprocessable(
            f"This Idempotency-Key was already used with another request: "
            f"{record.method} {record.path} answered {record.response_status}"
            f"{answered}. Use a new key for a new request.",
            code="idempotency_key_reused",
        )
    # Nothing was created this time: a replayed 201 says 200, as a repeated POST
    # did before the key existed.
    replay_status = (
        status.HTTP_200_OK
        if record.response_status == status.HTTP_201_CREATED
        else record.response_status
    )
    response = Response(record.response_body, status=replay_status)
    response["Idempotent-Replayed"] = "true"
    if record.response_location:
        response["Location"] = record.response_location
    return response


def prune_idempotency_records() -> int:
    """Scheduled job: delete records past their TTL. Returns how many went."""
    deleted, _ = IdempotencyRecord.objects.filter(
        created_at__lt=timezone.now() - ttl()
    ).delete()
    return deleted
