"""Re-encrypt every stored secret with the first key of CODEX_FERNET_KEYS."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from codex.configuration.crypto import SecretUnreadable
from codex.configuration.models import Setting
from codex.events.models import Event, EventKind
from codex.github.models import GitHubToken


class Command(BaseCommand):
    help = (
        "Re-encrypt every secret setting and cached token with the current (first) "
        "key of CODEX_FERNET_KEYS. Put the new key first, run this, then remove "
        "the old key."
    )

    def handle(self, *args, **options) -> None:
        try:
            settings_count = Setting.objects.reencrypt_all()
            tokens_count = GitHubToken.reencrypt_all()
        except SecretUnreadable as exc:
            raise CommandError(str(exc)) from exc
        Event.log(
            EventKind.CONTROL,
            actor="command:rotate_secrets",
            reason="secrets re-encrypted with the current key",
            subject="configuration:keys",
            data={"settings": settings_count, "tokens": tokens_count},
        )
        self.stdout.write(
            f"Re-encrypted {settings_count} secret setting(s) and "
            f"{tokens_count} cached token(s) with the current key."
        )
