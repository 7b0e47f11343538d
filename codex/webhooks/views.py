"""POST /api/webhooks/github/: verify, store, enqueue, answer within GitHub's 10 s.

The signature is the authentication: no session, no token, no CSRF. Order of
checks, each refusing before the next costs anything:

1. no GITHUB_WEBHOOK_SECRET configured → 503 (unsigned deliveries are refused,
   never accepted);
2. Content-Length over CODEX_WEBHOOK_MAX_BYTES → 413, before reading; the bytes
   actually read are checked too (a lying or missing Content-Length), and a
   chunked body (no Content-Length) is read from the server's stream to the
   same limit → 413 (411 where the server cannot say where it ends);
3. X-Hub-Signature-256 missing or wrong → 401, before the body is parsed;
4. missing or malformed X-GitHub-Event / X-GitHub-Delivery → 400 (without a
   delivery id there is nothing to store it under);
5. a delivery id already stored (GitHub redelivers with the same id) → 200:
   found by the INSERT itself (unique delivery_id), not by a SELECT first;
6. a signed body that is not a JSON object, or whose JSON a JSON column cannot
   hold (an unpaired surrogate such as \\ud800, or anything the database
   refuses) → 202, stored raw as unprocessable with the reason, for an operator
   to see in the console: GitHub does not redeliver, so it is never dropped;
7. ping → 200; an event or action Codex does not act on → 202, stored as ignored;
8. otherwise stored and `process_delivery` enqueued on commit → 202.

The raw body is stored with every delivery (`WebhookDelivery.body`), the
parsed payload beside it; NUL characters are replaced in the payload only.

The ack is on GitHub's clock and under load, so it does only what the 202
promises: one INSERT of the delivery (committed before the answer) and, for a
delivery that needs work, one job enqueued after that commit. Everything else
(resolving the repository, validating what the payload says) is the worker's.

No exception escapes as a 500: anything unexpected is answered 400 with a
reason (the operator sees the log).
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

from django.conf import settings
from django.db import DataError
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from codex.core.workers import broker_after_commit, enqueue_on_commit
from codex.webhooks.events import is_handled
from codex.webhooks.models import Outcome, WebhookDelivery, scrub
from codex.webhooks.signature import signature_is_valid

logger = logging.getLogger(__name__)

PROCESS_JOB = "codex.webhooks.jobs.process_delivery"
EVENT_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,59}$")
DELIVERY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")
ACTION_MAX_LENGTH = 60
ERROR_MAX_LENGTH = 2000
NUL_ESCAPE = b"\\u0000"
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def error(
    status: int, code: str, message: str, fields: dict[str, Any] | None = None
) -> JsonResponse:
    """The API's one error shape: {"error": {"code", "message", "fields"}}."""
    return JsonResponse(
        {"error": {"code": code, "message": message, "fields": fields or {}}},
        status=status,
    )


class BadPayload(ValueError):
    """The body is not a JSON object GitHub would send."""


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; PostgreSQL's jsonb refuses them later.
    raise BadPayload(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # 1e400 parses as infinity, which jsonb refuses as it refuses Infinity.
    value = float(text)
    if not math.isfinite(value):
        raise BadPayload(f"{text} is beyond what JSON numbers can be stored as")
    return value


def parse_payload(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, NUL characters scrubbed. Raises BadPayload."""
    try:
        payload = json.loads(
            body.decode("utf-8"),
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadPayload(f"the body is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise BadPayload("the body must be a JSON object")
    # JSON can only spell U+0000 as the escape \u0000 (a raw control character
    # in a string is refused by the parser), so a body without it needs no walk
    # over the whole payload; the same holds for surrogate escapes.
    if SURROGATE_ESCAPE.search(body) and not _encodable(payload):
        raise BadPayload(
            "the JSON holds an unpaired surrogate escape (such as \\ud800), "
            "which is not text a JSON column can store"
        )
    return scrub(payload) if NUL_ESCAPE in body else payload


def _encodable(payload: dict[str, Any]) -> bool:
    # A paired surrogate escape is one character once parsed; a lone one stays
    # a surrogate, which no UTF-8 text (nor jsonb) can hold.
    try:
        json.dumps(payload, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@csrf_exempt
def github_webhook(request: HttpRequest) -> JsonResponse:
    """Receive one GitHub webhook delivery (see the module docstring)."""
    try:
        return _receive(request)
    except Exception:  # never a 500 to GitHub: log it, answer with a reason
        logger.exception("webhook delivery could not be received")
        return error(
            400,
            "delivery_not_stored",
            "The delivery could not be stored; see the server log.",
        )


def _receive(request: HttpRequest) -> JsonResponse:
    if request.method != "POST":
        response = error(405, "method_not_allowed", "Only POST is accepted.")
        response["Allow"] = "POST"
        return response
    secret = settings.GITHUB_WEBHOOK_SECRET
    if not secret:
        return error(
            503,
            "webhook_secret_not_configured",
            "GITHUB_WEBHOOK_SECRET is not set, so deliveries cannot be verified; "
            "they are refused rather than accepted unsigned.",
        )
    limit = settings.CODEX_WEBHOOK_MAX_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return error(400, "bad_content_length", "Content-Length is not a number.")
    if declared > limit:
        return _too_large(limit)
    body = _read_body(request, limit)
    if body is None:
        return error(
            411,
            "length_required",
            "A body without Content-Length cannot be read here; send its length.",
        )
    if len(body) > limit:
        return _too_large(limit)
    if not signature_is_valid(body, secret, request.headers.get("X-Hub-Signature-256")):
        return error(
            401,
            "bad_signature",
            "X-Hub-Signature-256 is missing or does not match the body.",
        )
    event = request.headers.get("X-GitHub-Event", "")
    delivery_id = request.headers.get("X-GitHub-Delivery", "")
    fields = {}
    if not EVENT_PATTERN.match(event):
        fields["X-GitHub-Event"] = ["missing or malformed"]
    if not DELIVERY_PATTERN.match(delivery_id):
        fields["X-GitHub-Delivery"] = ["missing or malformed"]
    if fields:
        return error(400, "bad_headers", "Required GitHub headers are missing.", fields)
    try:
        payload = parse_payload(body)
    except BadPayload as exc:
        return _keep_unprocessable(delivery_id, event, body, str(exc))
    action = payload.get("action")
    action = action[:ACTION_MAX_LENGTH] if isinstance(action, str) else ""

    now = timezone.now()
    if event == "ping":
        outcome, detail, processed, status = Outcome.PROCESSED, "pong", now, 200
    elif not is_handled(event, action):
        outcome, detail, processed, status = (
            Outcome.IGNORED,
            f"Codex does not act on {event}{f'.{action}' if action else ''}",
            now,
            202,
        )
    else:
        outcome, detail, processed, status = Outcome.PENDING, "", None, 202
    try:
        delivery = WebhookDelivery.objects.receive(
            delivery_id=delivery_id,
            event=event,
            action=action,
            payload=payload,
            body=body,
            outcome=outcome,
            detail=detail,
            processed_at=processed,
        )
    except (DataError, ValueError) as exc:
        # The database refused the payload (text jsonb cannot hold): keep the
        # raw body, which bytea always can.
        logger.warning("webhook payload refused by the database: %s", exc)
        # The first line and PostgreSQL's DETAIL say why; the others quote
        # the statement.
        lines = str(exc).strip().splitlines()
        reason = " ".join(lines[:1] + [x for x in lines[1:] if x.startswith("DETAIL")])
        return _keep_unprocessable(
            delivery_id,
            event,
            body,
            f"the database refused the payload: {type(exc).__name__}: {reason}",
            action=action,
        )
    if delivery is None:  # GitHub redelivers with the same id
        return _redelivered(delivery_id)
    if outcome == Outcome.PENDING:
        # Stored and committed by now (or, inside a caller's transaction, sent
        # when that commits): the job never runs before its row is visible.
        enqueue_on_commit(PROCESS_JOB, delivery.pk, broker=broker_after_commit())
    return JsonResponse(
        {"delivery": delivery_id, "event": event, "outcome": outcome},
        status=status,
    )


def _keep_unprocessable(
    delivery_id: str, event: str, body: bytes, reason: str, action: str = ""
) -> JsonResponse:
    """Store a signed delivery whose payload cannot be read or stored: the raw
    body only, processed (no job will ever act on it), the reason in `error`.
    Answered 202 so that GitHub counts it delivered: it is kept, not lost."""
    delivery = WebhookDelivery.objects.receive(
        delivery_id=delivery_id,
        event=event,
        action=action,
        payload={},
        body=body,
        outcome=Outcome.UNPROCESSABLE,
        error=reason[:ERROR_MAX_LENGTH],
        processed_at=timezone.now(),
    )
    if delivery is None:
        return _redelivered(delivery_id)
    return JsonResponse(
        {
            "delivery": delivery_id,
            "event": event,
            "outcome": Outcome.UNPROCESSABLE,
            "detail": f"kept unprocessed: {reason}"[:ERROR_MAX_LENGTH],
        },
        status=202,
    )


def _read_body(request: HttpRequest, limit: int) -> bytes | None:
    """At most `limit` + 1 bytes of the body, whatever its framing; None for a
    body of unknown length the server has not framed for us.

    Read from the stream: request.body would apply Django's own
    DATA_UPLOAD_MAX_MEMORY_SIZE instead of our limit. Django reads only
    Content-Length bytes, so a chunked body (no Content-Length) would look
    empty; gunicorn de-chunks it and says where it ends
    (`wsgi.input_terminated`), so it is read from the server's stream.
    """
    if request.META.get("CONTENT_LENGTH") or not request.META.get(
        "HTTP_TRANSFER_ENCODING"
    ):
        return request.read(limit + 1)
    if not request.META.get("wsgi.input_terminated"):
        return None
    stream = request.META["wsgi.input"]
    body = bytearray()
    while len(body) <= limit:
        chunk = stream.read(min(65536, limit + 1 - len(body)))
        if not chunk:
            break
        body.extend(chunk)
    return bytes(body)


def _too_large(limit: int) -> JsonResponse:
    return error(413, "payload_too_large", f"The body is larger than {limit} bytes.")


def _redelivered(delivery_id: str) -> JsonResponse:
    return JsonResponse(
        {"delivery": delivery_id, "outcome": "duplicate", "detail": "already received"},
        status=200,
    )
