"""Repositories that tasks work on."""

from __future__ import annotations

import shlex
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from codex.core.store import hot_row
from integrations.jail.egress import allowed_host_list


class Forge(models.TextChoices):
    """Where a repository's remote and pull requests live."""

    GITHUB = "github", "GitHub"
    LOCAL = "local", "Local forge (bare repository on disk)"


def normalize_repository_url(url: str) -> str:
    """The canonical form of a repository URL: https, no `.git`, no trailing slash;
    or, for the local forge, `file:///absolute/path/name.git` of a bare repository.

    What an operator may register (any host); intake holds URLs to the
    configured GitHub's (codex.repositories.intake). Raises ValidationError
    with a reason for anything else.
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
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:  # a bad port or IPv6 literal
        raise ValidationError(f"The repository URL does not parse ({exc}).") from None
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
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    port = f":{port}" if port else ""
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


COMMAND_MAX_LENGTH = 1000


def validate_command(value: str) -> None:
    """A check command: one program and its arguments in shell quoting (run
    without a shell, so no pipes, redirections or `&&`)."""
    text = (value or "").strip()
    if not text:
        return
    if any(ord(char) < 32 for char in text):
        raise ValidationError("A command cannot contain control characters.")
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise ValidationError(f"The command cannot be parsed: {exc}.") from None
    if not argv:
        raise ValidationError("The command names no program.")
    if "/" in argv[0]:
        raise ValidationError(
            "Name the program, not a path (e.g. `pytest`, `ruff`); it is looked "
            "up on the agents' PATH."
        )
    if any(arg in ("|", "||", "&&", ";", ">", "<") for arg in argv):
        raise ValidationError(
            "Commands run without a shell: pipes, `&&`, `;` and redirections "
            "are not available."
        )


def validate_setup_command(value: str) -> None:
    """A setup command line (run by bash in the jail): printable text."""
    text = value or ""
    if any(ord(char) < 32 and char not in "\n\t" for char in text):
        raise ValidationError("A setup command cannot contain control characters.")


def validate_network_hosts(value: str) -> None:
    """Host names only: no addresses, ports, schemes or wildcards."""
    try:
        allowed_host_list(value)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


class MergeGate(models.TextChoices):
    """Who merges a repository's pull requests once review approves and the
    checks pass (docs/gates.md)."""

    AUTO = "auto", "Codex merges (no person needed)"
    APPROVAL = "approval", "A person with write access approves, then Codex merges"
    MANUAL = "manual", "A person merges; Codex notices and completes the task"


# What intake reads of a repository it finds by URL (another field read from
# it is one more query: the intake query-count test would see it).
INTAKE_FIELDS = ("url", "accepts_tasks", "registered_on_first_use")


class RepositoryQuerySet(models.QuerySet):
    def for_url(self, url: str) -> RepositoryQuerySet:
        return self.filter(url=normalize_repository_url(url))

    @hot_row
    def at_url(self, url: str) -> RepositoryQuerySet:
        """The repository registered at `url`, already normalized, or None
        (every POST /api/tasks/ asks; url is unique: no ORDER BY), with only
        what intake reads (INTAKE_FIELDS): the checks, policies and detected
        environment are the workers', and the detection can be large."""
        return self.filter(url=url).only(*INTAKE_FIELDS).order_by()[:1]


class Repository(models.Model):
    """A repository Codex may work on, identified by its canonical URL.

    Registered by an operator (any host, or the local forge), or on first use
    by intake with these defaults, only for repositories of the configured
    GitHub (codex.repositories.intake; not at all when
    CODEX_INTAKE_REGISTERED_REPOSITORIES_ONLY is set); `accepts_tasks` lets an
    operator stop intake for one repository.
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
    # What QA runs for real in the task's worktree (agents.roles.qa).
    test_command = models.CharField(
        max_length=COMMAND_MAX_LENGTH,
        blank=True,
        validators=[validate_command],
        help_text="Blank: the detected test command (shown below), else "
        "CODEX_TEST_COMMAND. `{junit_xml}` in it is replaced by a file path for "
        "JUnit XML, e.g. pytest -q --junitxml={junit_xml}.",
    )
    lint_command = models.CharField(
        max_length=COMMAND_MAX_LENGTH,
        blank=True,
        validators=[validate_command],
        help_text="Blank: CODEX_LINT_COMMAND; no lint when that is empty too.",
    )
    type_check_command = models.CharField(
        max_length=COMMAND_MAX_LENGTH,
        blank=True,
        validators=[validate_command],
        help_text="Blank: CODEX_TYPE_CHECK_COMMAND; no type check when that is "
        "empty too.",
    )
    check_timeout_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(10), MaxValueValidator(4 * 3600)],
        help_text="How long QA's run of each command above (and the same run on "
        "the base branch) may take, in seconds. Blank: CODEX_CHECK_TIMEOUT_SECONDS "
        "(900). A one-off command of an agent keeps the jail's own limit.",
    )
    # How the command jail treats this repository (integrations.jail).
    setup_command = models.TextField(
        blank=True,
        max_length=COMMAND_MAX_LENGTH,
        validators=[validate_setup_command],
        help_text="A bash command line run once per worktree, in the jail, before "
        "the first agent (e.g. python3 -m venv .venv && .venv/bin/pip install "
        "-e .[test], or npm ci). Blank: the detected setup (shown below), with "
        "its registry's hosts. What it creates is kept out of commits and "
        "cached per lock file.",
    )
    setup_network_hosts = models.CharField(
        max_length=COMMAND_MAX_LENGTH,
        blank=True,
        validators=[validate_network_hosts],
        help_text="The host names the setup command may reach over HTTPS, "
        "space-separated (e.g. pypi.org files.pythonhosted.org "
        "registry.npmjs.org). Blank: the detected setup reaches its registry's "
        "hosts; a setup command of the repository's own has no network. Agents' "
        "commands never have a network.",
    )
    # What Codex detected at the last commit it looked at (agents.ecosystems):
    # shown to operators, and what a blank field above falls back to.
    detected_environment = models.JSONField(default=dict, blank=True, editable=False)
    detected_at_commit = models.CharField(max_length=64, blank=True, editable=False)
    sandbox_image = models.CharField(
        max_length=200,
        blank=True,
        help_text="Container backends only (CODEX_SANDBOX=docker or podman): the "
        "image commands run in. Blank: CODEX_SANDBOX_IMAGE.",
    )
    worktree_quota_mb = models.PositiveIntegerField(
        default=1024,
        validators=[MinValueValidator(16), MaxValueValidator(1024 * 1024)],
        verbose_name="worktree quota (MB)",
        help_text="The most disk one agent's worktree of this repository may "
        "hold, in MB (its checkout, what setup installs, what commands and "
        "tools write). A command that writes past it is stopped and told what "
        "fills the worktree. Raise it for a repository bigger than 1 GB.",
    )
    command_allow_list = models.CharField(
        max_length=COMMAND_MAX_LENGTH,
        blank=True,
        help_text="Blank: agents get a real shell (bash) in the jail. Otherwise "
        "space-separated program names: agents run only these, without a shell.",
    )

    # What people decide before Codex goes on (docs/gates.md).
    merge_gate = models.CharField(
        max_length=10,
        choices=MergeGate.choices,
        default=MergeGate.AUTO,
        help_text="auto: Codex merges; approval: a person with write access "
        "other than the requester approves first (on GitHub, or on the task "
        "page for the local forge); manual: a person merges.",
    )
    monthly_cap_usd = models.DecimalField(
        max_digits=10,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Blank: no cap. The agents' spend on this repository's tasks "
        "in a calendar month (UTC); at the cap new steps wait until it is raised "
        "or the month ends (docs/gates.md).",
    )
    plan_approval = models.BooleanField(
        default=False,
        help_text="On: every task waits after planning until a person approves "
        "its spec, plan and tasks (a request can also ask for it: the codex:plan "
        "label, the API's plan_approval field or the form's checkbox).",
    )

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

    @property
    def setup_hosts(self) -> list[str]:
        """The hosts the setup command may reach (none: no network)."""
        try:
            return allowed_host_list(self.setup_network_hosts)
        except ValueError:
            return []  # refused by the form; a raw bad value opens nothing

    def detected(self, key: str) -> str:
        """One detected value as text ("" when nothing was detected):
        setup_command, setup_hosts, test_command, runner."""
        value = (self.detected_environment or {}).get(key) or ""
        return " ".join(value) if isinstance(value, list) else str(value)

    @property
    def allowed_commands(self) -> list[str] | None:
        """The programs agents may run, or None for a real shell."""
        names = self.command_allow_list.split()
        return names or None

    def clean(self) -> None:
        try:
            self.url = normalize_repository_url(self.url)
        except ValidationError as exc:
            raise ValidationError({"url": exc.messages}) from None

    def save(self, *args, **kwargs) -> None:
        self.forge = forge_of(self.url)
        super().save(*args, **kwargs)


class LocalPullRequest(models.Model):
    """A pull request of the local forge (codex.repositories.local_forge): the
    branches live in the bare repository at `repository.local_path`, the pull
    request itself here. `number` counts per repository from 1; at most one
    open pull request per head branch (enforced by the database).

    Its comments, labels and closing live in LocalIssue/LocalComment under the
    same number: as on GitHub, a pull request is also an issue.
    """

    class State(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"
        MERGED = "merged", "Merged"

    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, related_name="local_pull_requests"
    )
    number = models.PositiveIntegerField()
    head = models.CharField(max_length=200, help_text="The branch to merge.")
    base = models.CharField(max_length=200, help_text="The branch merged into.")
    title = models.CharField(max_length=300)
    body = models.TextField(blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    draft = models.BooleanField(default=False)
    head_sha = models.CharField(max_length=64, blank=True)
    merge_sha = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    merged_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["repository", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["repository", "number"], name="local_pr_number_unique"
            ),
            models.UniqueConstraint(
                fields=["repository", "head"],
                condition=models.Q(state="open"),
                name="local_pr_one_open_per_head",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.repository.full_name}#{self.number}"


class LocalIssue(models.Model):
    """What the local forge records about an issue or pull request number of a
    local repository: its labels and whether it was closed. Issues of a local
    repository have no other existence; the row appears on first use."""

    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, related_name="local_issues"
    )
    number = models.PositiveIntegerField()
    labels = models.JSONField(default=list, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["repository", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["repository", "number"], name="local_issue_number_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.repository.full_name}#{self.number}"

    @property
    def is_closed(self) -> bool:
        """Whether the local forge closed this issue or pull request number."""
        return self.closed_at is not None


class LocalComment(models.Model):
    """A comment the local forge recorded on an issue or pull request; its
    primary key is the comment id the forge reports."""

    issue = models.ForeignKey(
        LocalIssue, on_delete=models.CASCADE, related_name="comments"
    )
    body = models.TextField()
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["issue", "id"]

    def __str__(self) -> str:
        return f"comment {self.pk} on {self.issue}"
