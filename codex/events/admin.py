from django.contrib import admin

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
    list_filter = ["kind", "field"]
    list_select_related = ["task"]
    search_fields = ["task__task_id", "actor", "reason"]
    date_hierarchy = "created_at"
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
