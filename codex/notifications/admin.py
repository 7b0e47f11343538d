"""The operator console for the notification outbox."""

from __future__ import annotations

from django.contrib import admin

from codex.core.admin import CodexFSMAdminMixin, EstimatedCountPaginator
from codex.notifications.models import Notification


@admin.register(Notification)
class NotificationAdmin(CodexFSMAdminMixin, admin.ModelAdmin):
    """Notifications are written by the system; an operator only watches them,
    fails a row a dead worker left in `sending`, or retries a failed one."""

    fsm_fields = ["status"]
    list_display = [
        "notification_id",
        "channel",
        "recipient",
        "subject",
        "task",
        "status",
        "attempts",
        "next_attempt_at",
        "sent_at",
        "created_at",
    ]
    # Not by channel: listing the channels in use reads every notification.
    list_filter = ["status", "created_at"]
    list_select_related = ["task"]
    search_fields = ["notification_id", "recipient", "subject", "task__task_id"]
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    fields = [
        "notification_id",
        "task",
        "channel",
        "recipient",
        "subject",
        "body",
        "status",
        "attempts",
        "next_attempt_at",
        "claimed_at",
        "sent_at",
        "last_error",
        "created_at",
    ]
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False  # enqueued by the system, deduplicated by notification_id

    def _execute_fsm_transition(self, *, transition_func, request, kwargs=None):
        # Record which operator acted in the transition's event.
        transition_func(by=f"user:{request.user.get_username()}", **(kwargs or {}))
