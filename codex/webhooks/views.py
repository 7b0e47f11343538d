"""POST /api/webhooks/github/: verify, store, enqueue, answer within GitHub's 10 s.

The signature is the authentication: no session, no token, no CSRF. Order of
checks, each refusing before the next costs anything:

1. no GITHUB_WEBHOOK_SECRET configured → 503 (unsigned deliveries are refused,
   never accepted);
2. Content-Length over CODEX_WEBHOOK_MAX_BYTES → 413, before reading; the bytes
   actually read are checked too (a lying or missing Content-Length);
3. X-Hub-Signature-256 missing or wrong → 401, before the body is parsed;
4. missing or malformed X-GitHub-Event / X-GitHub-Delivery, body not a JSON
   object → 400;
5. a delivery id already stored (GitHub redelivers with the same id) → 200:
   found by the INSERT itself (unique delivery_id), not by a SELECT first;
6. ping → 200; an event or action Codex does not act on → 202, stored as ignored;
7. otherwise stored and `process_delivery` enqueued on commit → 202.

The ack is on GitHub's clock and under load, so it does only what the 202
promises: one INSERT of the delivery (committed before the answer) and, for a
delivery that needs work, one job enqueued after that commit. Everything else
(resolving the repository, validating what the payload says) is the worker's.

No exception escapes as a 500: anything unexpected is answered 400 with a
reason (GitHub does not retry failed deliveries; the operator sees the log).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from codex.core.queue import broker_after_commit, enqueue_on_commit
from codex.webhooks.events import is_handled
from codex.webhooks.models import Outcome, WebhookDelivery, scrub
from codex.webhooks.signature import signature_is_valid

logger = logging.getLogger(__name__)

PROCESS_JOB = "codex.webhooks.jobs.process_delivery"
EVENT_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,59}$")
DELIVERY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")
ACTION_MAX_LENGTH = 60
NUL_ESCAPE = b"\\u0000"


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


def parse_payload(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, NUL characters scrubbed. Raises BadPayload."""
    try:
        payload = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadPayload(f"the body is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise BadPayload("the body must be a JSON object")
    # JSON can only spell U+0000 as the escape \u0000 (a raw control character
    # in a string is refused by the parser), so a body without it needs no walk
    # over the whole payload.
    return scrub(payload) if NUL_ESCAPE in body else payload


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
    # Read the stream ourselves: request.body would apply Django's own
    # DATA_UPLOAD_MAX_MEMORY_SIZE instead of our limit.
    body = request.read(limit + 1)
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
        return error(400, "malformed_payload", str(exc))
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
    delivery = WebhookDelivery.objects.receive(
        delivery_id=delivery_id,
        event=event,
        action=action,
        payload=payload,
        outcome=outcome,
        detail=detail,
        processed_at=processed,
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


def _too_large(limit: int) -> JsonResponse:
    return error(413, "payload_too_large", f"The body is larger than {limit} bytes.")


def _redelivered(delivery_id: str) -> JsonResponse:
    return JsonResponse(
        {"delivery": delivery_id, "outcome": "duplicate", "detail": "already received"},
        status=200,
    )
