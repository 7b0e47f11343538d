"""Configuration held in the database, secrets encrypted at rest
(docs/domain/configuration.md#configuration-keys, #secrets)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction

from codex.configuration import crypto
from codex.configuration.registry import (
    InvalidSettingValue,
    UnknownSetting,
    config_key,
)
from codex.core.store import hot_row
from codex.events.models import Event, EventKind


class SettingQuerySet(models.QuerySet):
    @hot_row
    def stored(self, key: str) -> SettingQuerySet:
        """The row of `key`, or None (read by every step for every policy it
        applies; key is unique)."""
        return self.filter(key=key).order_by()[:1]

    def put(self, key: str, value: Any, *, actor: str) -> Setting:
        """Store `value` for `key` (validated, encrypted when secret) and log it.

        The event records who changed which key, never the value.
        """
        with transaction.atomic():
            setting = self.select_for_update().filter(key=key).first() or Setting(
                key=key
            )
            setting.set_value(value)
            setting.updated_by = actor
            setting.save()
            setting.log_change(actor)
        return setting

    def reencrypt_all(self) -> int:
        """Re-encrypt every secret with the current key; returns how many.

        Each UPDATE is conditional on the old ciphertext, so a value changed
        meanwhile is kept rather than overwritten with the re-encrypted old one.
        """
        count = 0
        for pk, old in self.filter(is_encrypted=True).values_list("pk", "value"):
            new = crypto.rotate(old)
            count += self.filter(pk=pk, value=old).update(value=new)
        return count


class Setting(models.Model):
    """One configuration value (docs/domain/configuration.md#configuration-keys:
    key, value, is_encrypted, updated_at).

    Keys come from `codex.configuration.registry`, which gives each its type,
    default and secrecy. A secret's `value` holds only Fernet ciphertext; it is
    decrypted on use (`plaintext()`) and shown masked (`display_value`).
    Read configuration through `codex.configuration.config.get_config`, which
    lets the environment override the database.
    """

    key = models.CharField(max_length=100, unique=True)
    value = models.TextField(help_text="Ciphertext when the key is secret.")
    is_encrypted = models.BooleanField(default=False, editable=False)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.CharField(max_length=200, blank=True, editable=False)

    objects = SettingQuerySet.as_manager()

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key

    @property
    def config(self):
        """The registry entry of this key."""
        return config_key(self.key)

    def clean(self) -> None:
        try:
            self.config  # noqa: B018 - raises for a key not in the registry
        except UnknownSetting as exc:
            raise ValidationError({"key": str(exc)}) from None

    def set_value(self, value: Any) -> None:
        """Validate `value` against the key's type and store it (encrypted if
        the key is secret). Raises InvalidSettingValue or UnknownSetting."""
        entry = self.config
        raw = entry.serialize(value)
        self.is_encrypted = entry.secret
        self.value = crypto.encrypt(raw) if entry.secret else raw

    def plaintext(self) -> str:
        """The stored value in clear text (decrypted when encrypted)."""
        return crypto.decrypt(self.value) if self.is_encrypted else self.value

    def typed_value(self) -> Any:
        """The stored value parsed to the key's type."""
        return self.config.parse(self.plaintext(), origin="the database")

    @property
    def display_value(self) -> str:
        """What a page may show: the value, or for a secret "••••" and at most
        its last four characters."""
        if not self.is_encrypted:
            return self.value
        try:
            return crypto.mask(self.plaintext())
        except crypto.SecretUnreadable:
            return f"{crypto.MASK} (cannot be decrypted with the current keys)"

    def log_change(self, actor: str) -> None:
        """Append the change to the event log, without the value."""
        Event.log(
            EventKind.CONTROL,
            actor=actor,
            reason=f"configuration {self.key} changed",
            subject=f"setting:{self.key}",
            data={"key": self.key, "encrypted": self.is_encrypted},
        )


__all__ = ["InvalidSettingValue", "Setting", "UnknownSetting"]
