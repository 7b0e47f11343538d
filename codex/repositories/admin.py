from django.contrib import admin

from codex.repositories.models import Repository


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    list_display = [
        "url",
        "forge",
        "default_branch",
        "accepts_tasks",
        "registered_on_first_use",
        "created_at",
    ]
    list_filter = ["forge", "accepts_tasks", "registered_on_first_use"]
    search_fields = ["url"]
    readonly_fields = ["registered_on_first_use", "created_at"]
