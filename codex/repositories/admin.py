from django.contrib import admin
from django.utils.html import format_html, format_html_join

from codex.repositories.models import (
    LocalComment,
    LocalIssue,
    LocalPullRequest,
    Repository,
)

# How to register each kind of repository, shown under the URL field.
URL_HELP = (
    "GitHub: https://github.com/owner/name. Local forge (no GitHub): "
    "file:///absolute/path/name.git, the absolute path of a bare repository on "
    "this machine (make one with: git init --bare /srv/git/name.git, then push "
    "its default branch to it); Codex pushes its branches there and keeps the "
    "pull requests itself."
)
# The blank fields detection fills, and the detected value each shows.
DETECTED_FIELDS = {
    "test_command": "test_command",
    "setup_command": "setup_command",
    "setup_network_hosts": "setup_hosts",
}


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    list_display = [
        "url",
        "forge",
        "default_branch",
        "accepts_tasks",
        "registered_on_first_use",
        "created_at",
    ]
    list_filter = ["forge", "accepts_tasks", "registered_on_first_use"]
    search_fields = ["url"]
    readonly_fields = ["registered_on_first_use", "created_at", "detected"]
    fieldsets = [
        (None, {"fields": ["url", "default_branch", "accepts_tasks"]}),
        (
            "Verification commands (run by QA in the task's worktree)",
            {
                "fields": [
                    "detected",
                    "test_command",
                    "lint_command",
                    "type_check_command",
                ]
            },
        ),
        (
            "Command jail (docs/jail.md)",
            {
                "fields": [
                    "setup_command",
                    "setup_network_hosts",
                    "command_allow_list",
                    "sandbox_image",
                    "worktree_quota_mb",
                ]
            },
        ),
        (
            "People decide (docs/gates.md)",
            {"fields": ["merge_gate", "plan_approval", "monthly_cap_usd"]},
        ),
        (None, {"fields": ["registered_on_first_use", "created_at"]}),
    ]

    def get_form(self, request, obj=None, change=False, **kwargs):
        """The model form, with how to write each kind of repository URL and,
        beside each blank field detection fills, what it detected."""
        help_texts = {"url": URL_HELP, **kwargs.get("help_texts", {})}
        for name, key in DETECTED_FIELDS.items():
            value = obj.detected(key) if obj is not None else ""
            if value and not getattr(obj, name):
                base = Repository._meta.get_field(name).help_text
                help_texts[name] = f"Detected: {value} (used while blank). {base}"
        kwargs["help_texts"] = help_texts
        return super().get_form(request, obj, change, **kwargs)

    @admin.display(description="Detected environment")
    def detected(self, obj: Repository) -> str:
        """What Codex found at the last commit it looked at (docs/jail.md)."""
        found = obj.detected_environment or {}
        ecosystems = found.get("ecosystems") or []
        if not ecosystems:
            return "nothing detected yet (detection runs at a task's first step)"
        rows = [
            ("ecosystems", ", ".join(str(e.get("name")) for e in ecosystems)),
            ("setup", obj.detected("setup_command") or "nothing to install"),
            ("setup hosts", obj.detected("setup_hosts") or "none"),
            ("test", obj.detected("test_command") or "none"),
            ("at commit", obj.detected_at_commit[:12]),
        ]
        rows += [("note", str(note)) for note in found.get("notes") or []]
        return format_html(
            "<dl>{}</dl>",
            format_html_join("", "<dt>{}</dt><dd><code>{}</code></dd>", rows),
        )


@admin.register(LocalPullRequest)
class LocalPullRequestAdmin(admin.ModelAdmin):
    """Pull requests of local-forge repositories. Read-only: their state follows
    the bare repository and the local forge's merges, not hand edits."""

    list_display = [
        "__str__",
        "title",
        "head",
        "base",
        "state",
        "draft",
        "created_at",
        "merged_at",
    ]
    list_filter = ["state", "draft", "repository"]
    search_fields = ["title", "head", "repository__url"]

    def has_add_permission(self, request) -> bool:
        """Pull requests are opened by the local forge, not by hand."""
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        """Read-only (see the class docstring)."""
        return False


class LocalCommentInline(admin.TabularInline):
    model = LocalComment
    extra = 0
    readonly_fields = ["body", "created_at"]
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        """Comments are recorded by the local forge, not by hand."""
        return False


@admin.register(LocalIssue)
class LocalIssueAdmin(admin.ModelAdmin):
    """What the local forge recorded on issue and pull request numbers."""

    list_display = ["__str__", "labels", "closed_at"]
    list_filter = ["repository"]
    readonly_fields = ["repository", "number", "labels", "closed_at"]
    inlines = [LocalCommentInline]

    def has_add_permission(self, request) -> bool:
        """Issue records appear when the local forge first uses a number."""
        return False
