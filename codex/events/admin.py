from django.contrib import admin

from codex.core.admin import EstimatedCountPaginator
from codex.events.models import Event


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "task",
        "kind",
        "field",
        "source",
        "target",
        "actor",
        "short_reason",
    ]
    # Choices and date ranges only: a filter listing the values a column holds
    # (`field`) reads all of a table that grows by millions of rows.
    list_filter = ["kind", "created_at"]
    # Newest first by the primary key's index: the log is appended in time.
    ordering = ["-id"]
    list_select_related = ["task"]
    search_fields = ["task__task_id", "actor", "reason"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False

    @admin.display(description="reason")
    def short_reason(self, event: Event) -> str:
        return event.reason[:80]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
