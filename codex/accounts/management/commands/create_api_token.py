"""`manage.py create_api_token <username>`: issue an API token and print its key."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from codex.accounts.models import ApiToken


class Command(BaseCommand):
    help = "Issue an API token for an existing user and print the key (shown once)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="command line")

    def handle(self, *args, username: str, name: str, **options) -> None:
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user named {username!r}.") from None
        _, key = ApiToken.issue(user, name)
        self.stdout.write(key)
