from django.contrib import admin

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
    readonly_fields = ["registered_on_first_use", "created_at"]
    fieldsets = [
        (None, {"fields": ["url", "default_branch", "accepts_tasks"]}),
        (
            "Verification commands (run by QA in the task's worktree)",
            {"fields": ["test_command", "lint_command", "type_check_command"]},
        ),
        (
            "Command jail (docs/jail.md)",
            {
                "fields": [
                    "setup_command",
                    "setup_network_hosts",
                    "command_allow_list",
                    "sandbox_image",
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
        """The model form, with how to write each kind of repository URL."""
        kwargs["help_texts"] = {"url": URL_HELP, **kwargs.get("help_texts", {})}
        return super().get_form(request, obj, change, **kwargs)


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
