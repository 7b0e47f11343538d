from django.contrib import admin
from django.db import models

from codex.repositories.models import Repository


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    list_display = [
        "url",
        "default_branch",
        "accepts_tasks",
        "registered_on_first_use",
        "created_at",
    ]
    list_filter = ["accepts_tasks", "registered_on_first_use"]
    search_fields = ["url"]
    readonly_fields = ["registered_on_first_use", "created_at"]
    # Django 6 assumes https for scheme-less URLs; say so now (no warning).
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
