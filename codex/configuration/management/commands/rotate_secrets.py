"""Re-encrypt every stored secret with the first key of CODEX_FERNET_KEYS."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from codex.configuration.crypto import SecretUnreadable, encrypted_elsewhere
from codex.configuration.models import Setting
from codex.events.models import Event, EventKind


class Command(BaseCommand):
    help = (
        "Re-encrypt every secret setting and cached token with the current (first) "
        "key of CODEX_FERNET_KEYS. Put the new key first, run this, then remove "
        "the old key."
    )

    def handle(self, *args, **options) -> None:
        try:
            counts = {"secret setting(s)": Setting.objects.reencrypt_all()}
            # The apps keeping encrypted rows of their own (the GitHub token
            # cache) registered them (codex.configuration.crypto).
            for label, reencrypt_all in encrypted_elsewhere().items():
                counts[label] = reencrypt_all()
        except SecretUnreadable as exc:
            raise CommandError(str(exc)) from exc
        Event.log(
            EventKind.CONTROL,
            actor="command:rotate_secrets",
            reason="secrets re-encrypted with the current key",
            subject="configuration:keys",
            data={"counts": counts},
        )
        said = " and ".join(f"{count} {label}" for label, count in counts.items())
        self.stdout.write(f"Re-encrypted {said} with the current key.")
