"""The operator console's view of webhook deliveries."""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.utils.html import format_html

from codex.core.admin import EstimatedCountPaginator
from codex.webhooks.jobs import reprocess
from codex.webhooks.models import Outcome, WebhookDelivery

# The admin page shows this much of a raw body (bodies go up to
# CODEX_WEBHOOK_MAX_BYTES).
RAW_BODY_SHOWN = 64 * 1024


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """Deliveries, read-only, with a re-process action."""

    list_display = [
        "received_at",
        "event",
        "action",
        "outcome",
        "short_detail",
        "repository",
        "delivery_id",
        "processed_at",
    ]
    # Not by event: listing the events received reads every delivery.
    list_filter = ["outcome", "received_at"]
    list_select_related = ["repository"]
    search_fields = ["delivery_id"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ["reprocess_deliveries"]
    exclude = ["payload", "body"]
    readonly_fields = [
        "delivery_id",
        "event",
        "action",
        "repository",
        "received_at",
        "processing_started_at",
        "processed_at",
        "attempts",
        "outcome",
        "detail",
        "error",
        "sender",
        "pretty_payload",
        "raw_body",
    ]

    @admin.display(description="detail")
    def short_detail(self, delivery: WebhookDelivery) -> str:
        """The first 80 characters of what processing did."""
        return (delivery.error or delivery.detail)[:80]

    @admin.display(description="sender")
    def sender(self, delivery: WebhookDelivery) -> str:
        """The GitHub login that caused the event."""
        return delivery.sender_login

    @admin.display(description="payload")
    def pretty_payload(self, delivery: WebhookDelivery) -> str:
        """The payload as indented JSON (escaped)."""
        return format_html(
            "<pre style='max-height:40em;overflow:auto'>{}</pre>",
            json.dumps(delivery.payload, indent=2, ensure_ascii=False),
        )

    @admin.display(description="raw body (as signed)")
    def raw_body(self, delivery: WebhookDelivery) -> str:
        """The body as GitHub sent it (what an unprocessable delivery keeps),
        as UTF-8 with undecodable bytes escaped, up to RAW_BODY_SHOWN bytes."""
        raw = bytes(delivery.body or b"")
        text = raw[:RAW_BODY_SHOWN].decode("utf-8", errors="backslashreplace")
        more = len(raw) - RAW_BODY_SHOWN
        return format_html(
            "<pre style='max-height:40em;overflow:auto'>{}</pre>{}",
            text,
            f"({more} more bytes not shown)" if more > 0 else "",
        )

    @admin.action(description="Re-process selected deliveries")
    def reprocess_deliveries(self, request, queryset) -> None:
        """Clear the processed state and enqueue processing again."""
        count = reprocess(queryset)
        self.message_user(
            request, f"{count} deliver(y/ies) queued for processing.", messages.SUCCESS
        )
        skipped = queryset.filter(outcome=Outcome.UNPROCESSABLE).count()
        if skipped:
            self.message_user(
                request,
                f"{skipped} unprocessable deliver(y/ies) left alone: their body "
                "could not be read as a JSON object (see their error).",
                messages.WARNING,
            )

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        # Viewing is allowed; the form has only read-only fields anyway.
        return request.method in ("GET", "HEAD") and super().has_change_permission(
            request, obj
        )
