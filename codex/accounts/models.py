"""API tokens, stored hashed.

DRF's own tokens are kept in plain text and never expire. Ours keep only a
SHA-256 of the key (the key is 40 random characters, so a fast hash is enough:
there is nothing to brute-force), are shown once when created, and can be revoked.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Exists, OuterRef
from django.utils import timezone

from codex.core.store import hot_row

KEY_PREFIX_LENGTH = 8


def hash_key(key: str) -> str:
    """The stored form of a token key."""
    return hashlib.sha256(key.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True)

    def authenticate(
        self, key: str, role_groups: Iterable[str] = ()
    ) -> ApiToken | None:
        """The active token whose key is `key`, with its user, or None.

        One query for every API request: the token, its user and which of
        `role_groups` the user is in (`token.user_role_groups`), so permission
        checks need no group query of their own. Looks among all tokens,
        whatever queryset it is called on.
        """
        names = tuple(role_groups)
        token = self.model.objects.active_with_hash(hash_key(key), role_groups=names)
        if token is not None:
            token.user_role_groups = frozenset(
                name
                for index, name in enumerate(names)
                if getattr(token, f"_in_group_{index}")
            )
        return token

    @hot_row
    def active_with_hash(
        self, key_hash: str, *, role_groups: tuple[str, ...]
    ) -> ApiTokenQuerySet:
        """The active token of `key_hash` with its user, annotated with
        whether the user is in each of `role_groups` (`_in_group_<n>`): every
        API request asks. key_hash is unique: LIMIT 1 with no ORDER BY."""
        in_group = {
            f"_in_group_{index}": Exists(
                Group.objects.filter(user=OuterRef("user_id"), name=name)
            )
            for index, name in enumerate(role_groups)
        }
        return (
            self.active()
            .select_related("user")
            .annotate(**in_group)
            .filter(key_hash=key_hash)
            .order_by()[:1]
        )


class ApiToken(models.Model):
    """A credential for the REST API (`Authorization: Token <key>`), one per client.

    `prefix` (the key's first characters) identifies a token in the admin without
    revealing it; `key_hash` is what authentication looks up.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What this token is for.")
    prefix = models.CharField(max_length=KEY_PREFIX_LENGTH, editable=False)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})"

    @classmethod
    def issue(cls, user, name: str) -> tuple[ApiToken, str]:
        """Create a token for `user`; returns it with the key, shown only now."""
        key = secrets.token_urlsafe(30)
        token = cls.objects.create(
            user=user, name=name, prefix=key[:KEY_PREFIX_LENGTH], key_hash=hash_key(key)
        )
        return token, key

    def revoke(self) -> None:
        """Stop the token from authenticating; kept for the audit trail."""
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
