"""`manage.py ensure_admin`: create the first operator account if there is none.

Used by `make run`. The password comes from CODEX_ADMIN_PASSWORD or is generated
and printed once.
"""

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create a superuser 'admin' when no superuser exists yet."

    def handle(self, *args, **options) -> None:
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write("An admin user exists already.")
            return
        password = os.environ.get("CODEX_ADMIN_PASSWORD") or ""
        generated = not password
        if generated:
            password = secrets.token_urlsafe(12)
        username = os.environ.get("CODEX_ADMIN_USERNAME") or "admin"
        User.objects.create_superuser(username=username, email="", password=password)
        if generated:
            self.stdout.write(
                self.style.WARNING(
                    f"Created admin user {username!r} with password: {password}\n"
                    "This password is shown only once."
                )
            )
        else:
            self.stdout.write(
                f"Created admin user {username!r} (password from CODEX_ADMIN_PASSWORD)."
            )
