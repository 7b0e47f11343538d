from django.contrib import admin, messages

from codex.accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = [
        "prefix",
        "name",
        "user",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    list_select_related = ["user"]
    search_fields = ["name", "prefix", "user__username"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    fields = ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke_tokens"]

    def has_change_permission(self, request, obj=None) -> bool:
        # A token's owner and name are fixed once issued; revoke and issue anew.
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request, obj, form, change) -> None:
        token, key = ApiToken.issue(obj.user, obj.name)
        obj.pk = token.pk
        obj.prefix = token.prefix
        self.message_user(
            request,
            f"Token created. Copy the key now, it is not shown again: {key}",
            messages.WARNING,
        )

    @admin.action(description="Revoke selected tokens")
    def revoke_tokens(self, request, queryset) -> None:
        for token in queryset.active():
            token.revoke()
