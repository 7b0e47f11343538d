"""The operator console for configuration and the credentials in use.

A secret is never rendered: lists and detail pages show "••••" and at most its
last four characters, and the form's password field starts empty (blank keeps
the stored value).
"""

from __future__ import annotations

import os

from django import forms
from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest

from codex.configuration.crypto import MASK
from codex.configuration.models import ActiveCredential, Setting
from codex.configuration.registry import KEYS, InvalidSettingValue, config_key


def operator(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


class SettingForm(forms.ModelForm):
    """Chooses a registry key and takes a new value, validated by its type."""

    key = forms.ChoiceField(choices=[(key, key) for key in KEYS])
    new_value = forms.CharField(
        label="Value",
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
    )

    class Meta:
        model = Setting
        fields = ["key"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["new_value"]
        if self.instance.pk and not self.instance.is_encrypted:
            field.widget = forms.TextInput(attrs={"size": 60})
            field.initial = self.instance.value
            field.help_text = "Blank keeps the current value."
        elif self.instance.pk:
            field.help_text = "Secret: type a new value, or leave blank to keep it."
        else:
            # The key is not known before submission, so any value is typed
            # hidden: a secret must not be echoed back by a form with errors.
            field.help_text = "Typed hidden, in case the key is secret."

    def clean(self) -> dict:
        cleaned = super().clean()
        key = cleaned.get("key") or self.instance.key
        value = cleaned.get("new_value", "")
        if not key:
            return cleaned
        if value == "":
            if not self.instance.pk:
                self.add_error("new_value", "A value is required.")
            return cleaned
        self.instance.key = key
        try:
            self.instance.set_value(value)
        except InvalidSettingValue as exc:
            self.add_error("new_value", str(exc))
        except ImproperlyConfigured as exc:
            # No encryption key in this deployment: say what to set, not a 500.
            self.add_error(None, f"This secret cannot be saved: {exc}")
        return cleaned


@admin.register(Setting)
class SettingAdmin(admin.ModelAdmin):
    form = SettingForm
    list_display = [
        "key",
        "current_value",
        "is_encrypted",
        "source",
        "updated_at",
        "updated_by",
    ]
    list_filter = ["is_encrypted"]
    search_fields = ["key"]
    show_full_result_count = False
    ordering = ["key"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["key", "new_value"]
        return [
            "key",
            "description",
            "current_value",
            "new_value",
            "is_encrypted",
            "source",
            "updated_at",
            "updated_by",
        ]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return [
            "key",
            "description",
            "current_value",
            "is_encrypted",
            "source",
            "updated_at",
            "updated_by",
        ]

    @admin.display(description="Value")
    def current_value(self, obj: Setting) -> str:
        try:
            return obj.display_value
        except ImproperlyConfigured:
            return f"{MASK} (no encryption key configured: CODEX_FERNET_KEYS)"

    @admin.display(description="Description")
    def description(self, obj: Setting) -> str:
        return config_key(obj.key).description

    @admin.display(description="In effect")
    def source(self, obj: Setting) -> str:
        # The database comes first (codex.configuration.config.get_config):
        # a saved value is always the one in effect.
        env_var = config_key(obj.key).env_var
        if env_var in os.environ:
            return f"this value (it overrides the environment's {env_var})"
        return "this value"

    def save_model(self, request, obj: Setting, form, change) -> None:
        obj.updated_by = operator(request)
        super().save_model(request, obj, form, change)
        obj.log_change(operator(request))


@admin.register(ActiveCredential)
class ActiveCredentialAdmin(admin.ModelAdmin):
    """Which credential each service uses; the keys themselves are never shown."""

    list_display = ["source", "index", "rotations", "rotated_at"]
    readonly_fields = ["source", "index", "rotations", "rotated_at"]

    def has_add_permission(self, request) -> bool:
        return False
