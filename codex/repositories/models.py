"""Repositories that tasks work on."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone


class Forge(models.TextChoices):
    """Where a repository's remote and pull requests live."""

    GITHUB = "github", "GitHub"
    LOCAL = "local", "Local forge (bare repository on disk)"


def normalize_repository_url(url: str) -> str:
    """The canonical form of a repository URL: https, no `.git`, no trailing slash;
    or, for the local forge, `file:///absolute/path/name.git` of a bare repository.

    Raises ValidationError with a reason for anything else.
    """
    text = (url or "").strip()
    if not text:
        raise ValidationError("A repository URL is required.")
    if any(ord(char) < 32 for char in text) or " " in text:
        raise ValidationError(
            "A repository URL cannot contain spaces or control characters."
        )
    if text.startswith("file:"):
        return _normalize_local_url(text)
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


def _normalize_local_url(text: str) -> str:
    parts = urlsplit(text)
    path = parts.path.rstrip("/")
    if parts.netloc or not path.startswith("/") or ".." in path.split("/"):
        raise ValidationError(
            "A local repository URL must be file:///absolute/path/to/name.git."
        )
    if not path.endswith(".git"):
        path += ".git"
    return f"file://{path}"


def forge_of(url: str) -> str:
    """The forge a canonical repository URL belongs to."""
    return Forge.LOCAL if url.startswith("file://") else Forge.GITHUB


class RepositoryQuerySet(models.QuerySet):
    def for_url(self, url: str) -> RepositoryQuerySet:
        return self.filter(url=normalize_repository_url(url))


class Repository(models.Model):
    """A repository Codex may work on, identified by its canonical URL.

    Registered by an operator, or on first use by intake with these defaults
    (unless CODEX_INTAKE_REGISTERED_REPOSITORIES_ONLY is set); `accepts_tasks`
    lets an operator stop intake for one repository.
    """

    url = models.CharField(max_length=500, unique=True)
    forge = models.CharField(
        max_length=10, choices=Forge.choices, default=Forge.GITHUB, editable=False
    )
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
        """`owner/name` (for the local forge: `folder/name`)."""
        url = self.url.removesuffix(".git") if self.is_local else self.url
        return "/".join(url.rsplit("/", 2)[-2:])

    @property
    def is_local(self) -> bool:
        return self.forge == Forge.LOCAL

    @property
    def local_path(self) -> str:
        """The bare repository's folder (local forge only)."""
        return self.url.removeprefix("file://")

    def clean(self) -> None:
        try:
            self.url = normalize_repository_url(self.url)
        except ValidationError as exc:
            raise ValidationError({"url": exc.messages}) from None

    def save(self, *args, **kwargs) -> None:
        self.forge = forge_of(self.url)
        super().save(*args, **kwargs)
