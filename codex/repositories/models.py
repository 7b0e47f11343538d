"""Repositories that tasks work on."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone


def normalize_repository_url(url: str) -> str:
    """The canonical form of a repository URL: https, no `.git`, no trailing slash.

    Raises ValidationError with a reason for anything that is not an http(s) URL
    with an owner and a name.
    """
    text = (url or "").strip()
    if not text:
        raise ValidationError("A repository URL is required.")
    if any(ord(char) < 32 for char in text) or " " in text:
        raise ValidationError(
            "A repository URL cannot contain spaces or control characters."
        )
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(
            "A repository URL must look like https://github.com/owner/name."
        )
    if parts.username or parts.password:
        raise ValidationError("A repository URL must not contain credentials.")
    path = parts.path.rstrip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    segments = [segment for segment in path.split("/") if segment]
    if len(segments) != 2:
        raise ValidationError(
            "A repository URL must name an owner and a repository: "
            "https://host/owner/name."
        )
    host = parts.hostname.lower()
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}/{segments[0]}/{segments[1]}"


class RepositoryQuerySet(models.QuerySet):
    def for_url(self, url: str) -> RepositoryQuerySet:
        return self.filter(url=normalize_repository_url(url))


class Repository(models.Model):
    """A repository Codex may work on, identified by its canonical URL.

    Registered by an operator, or on first use by intake with these defaults
    (unless CODEX_INTAKE_REGISTERED_REPOSITORIES_ONLY is set); `accepts_tasks`
    lets an operator stop intake for one repository.
    """

    url = models.URLField(max_length=300, unique=True)
    default_branch = models.CharField(max_length=100, default="main")
    accepts_tasks = models.BooleanField(
        default=True, help_text="When off, intake refuses new tasks for it."
    )
    registered_on_first_use = models.BooleanField(default=False, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = RepositoryQuerySet.as_manager()

    class Meta:
        ordering = ["url"]
        verbose_name_plural = "repositories"

    def __str__(self) -> str:
        return self.full_name

    @property
    def full_name(self) -> str:
        """`owner/name`."""
        return "/".join(self.url.rsplit("/", 2)[-2:])

    def clean(self) -> None:
        try:
            self.url = normalize_repository_url(self.url)
        except ValidationError as exc:
            raise ValidationError({"url": exc.messages}) from None
