"""The operator console for claims, backlog runs and the project board."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django_fsm import TransitionNotAllowed

from codex.claims.models import (
    BacklogRun,
    BacklogState,
    BoardItem,
    ClaimNotHeld,
    ClaimState,
    IssueClaim,
)
from codex.claims.models.backlog import ACTIVE_STATES
from codex.core.admin import CodexFSMAdminMixin
from codex.core.store import VersionConflict
from codex.github.models import GitHubProject
from codex.tasks.models import TERMINAL_STATUSES


def operator(request: HttpRequest) -> str:
    """The event log's actor for an operator's action."""
    return f"user:{request.user.get_username()}"


class PerformTransitionsMixin(CodexFSMAdminMixin):
    """Transition buttons run through `perform`: versioned, logged, with `by`."""

    def _apply_fsm_transition(
        self, *, obj, transition_name: str, request, kwargs=None
    ) -> bool:
        try:
            obj.perform(transition_name, by=operator(request), **(kwargs or {}))
        except TransitionNotAllowed:
            self.message_user(
                request, f"{transition_name!r} is not allowed now.", messages.ERROR
            )
            return False
        except (VersionConflict, ClaimNotHeld) as exc:
            self.message_user(
                request, f"{transition_name!r} did not happen: {exc}.", messages.ERROR
            )
            return False
        self.message_user(request, f"{obj}: {transition_name} done.")
        return True

    def has_add_permission(self, request) -> bool:
        return False  # rows come from sessions, runs and imports

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # the event log tells their story; keep what it refers to


class StaleFilter(admin.SimpleListFilter):
    """Claimed or failed claims whose TTL has passed."""

    title = "stale (past TTL)"
    parameter_name = "stale"

    def lookups(self, request, model_admin):
        return [("yes", "Stale"), ("no", "Not stale")]

    def queryset(self, request, queryset):
        stale = IssueClaim.objects.stale(timezone.now()).values("pk")
        if self.value() == "yes":
            return queryset.filter(pk__in=stale)
        if self.value() == "no":
            return queryset.exclude(pk__in=stale)
        return queryset


@admin.register(IssueClaim)
class IssueClaimAdmin(PerformTransitionsMixin, admin.ModelAdmin):
    fsm_fields = ["state"]
    list_display = [
        "__str__",
        "title",
        "state",
        "claimed_by",
        "claimed_at",
        "expires_at",
        "is_stale",
        "failure_count",
        "total_attempts",
        "successful_closes",
    ]
    list_filter = ["state", StaleFilter, "issue_closed", "repository"]
    list_select_related = ["repository"]
    search_fields = ["title", "claimed_by", "last_session", "repository__url"]
    show_full_result_count = False
    actions = ["release_claims", "expire_stale_claims"]
    readonly_fields = [
        "repository",
        "number",
        "state",
        "claimed_by",
        "claimed_at",
        "expires_at",
        "failure_count",
        "failed_at",
        "issue_closed",
        "total_attempts",
        "successful_closes",
        "failure_reasons",
        "last_session",
        "created_at",
        "version",
        "updated_at",
    ]
    fieldsets = [
        ("Issue", {"fields": ["repository", "number", "title", "issue_closed"]}),
        (
            "Claim",
            {
                "fields": [
                    "state",
                    "claimed_by",
                    "claimed_at",
                    "expires_at",
                    "failure_count",
                    "failed_at",
                ]
            },
        ),
        (
            "History",
            {
                "fields": [
                    "total_attempts",
                    "successful_closes",
                    "failure_reasons",
                    "last_session",
                ]
            },
        ),
        ("Concurrency", {"fields": ["version", "created_at", "updated_at"]}),
    ]

    @admin.display(boolean=True, description="stale")
    def is_stale(self, claim: IssueClaim) -> bool:
        return claim.stale

    def get_search_results(self, request, queryset, search_term):
        # Operators type "42" or "#42" for an issue number.
        results, duplicates = super().get_search_results(request, queryset, search_term)
        number = search_term.strip().lstrip("#")
        if number.isdigit():
            results |= queryset.filter(number=int(number))
        return results, duplicates

    @admin.action(description="Release claim (the issue can be claimed again)")
    def release_claims(
        self, request: HttpRequest, queryset: QuerySet[IssueClaim]
    ) -> None:
        released, skipped = 0, 0
        for claim in queryset.filter(state=ClaimState.CLAIMED).select_related(
            "repository"
        ):
            try:
                claim.perform(
                    "release", by=operator(request), reason="released by an operator"
                )
            except VersionConflict:
                skipped += 1
                continue
            released += 1
        self.message_user(request, f"Released {released} claim(s).")
        if skipped:
            self.message_user(
                request,
                f"{skipped} claim(s) changed meanwhile and were left alone.",
                messages.WARNING,
            )

    @admin.action(description="Expire stale claims (TTL passed)")
    def expire_stale_claims(
        self, request: HttpRequest, queryset: QuerySet[IssueClaim]
    ) -> None:
        expired = queryset.expire_stale(by=operator(request))
        self.message_user(request, f"Expired {expired} stale claim(s).")


class BacklogRunForm(forms.ModelForm):
    """What an operator chooses when starting a run."""

    class Meta:
        model = BacklogRun
        fields = ["repository", "sessions", "threshold"]

    def clean_repository(self):
        """At most one live run per repository."""
        repository = self.cleaned_data["repository"]
        # Two live runs on one repository would not start duplicate tasks (the
        # claims and idempotency keys prevent that) but would silently double
        # the number of parallel sessions the operator asked for.
        if BacklogRun.objects.active().filter(repository=repository).exists():
            raise forms.ValidationError(
                "A backlog run is already going on this repository; stop it first."
            )
        return repository


@admin.register(BacklogRun)
class BacklogRunAdmin(PerformTransitionsMixin, admin.ModelAdmin):
    """Operators start a run by adding one (repository, parallel sessions,
    threshold) and end it early with Stop; workers play its rounds
    (codex.claims.jobs.play_backlog_rounds)."""

    fsm_fields = ["state"]
    form = BacklogRunForm
    list_display = [
        "__str__",
        "repository",
        "state",
        "sessions",
        "active_tasks",
        "started_tasks",
        "rounds",
        "consecutive_empty_rounds",
        "threshold",
        "issues_found",
        "last_check",
        "started_at",
        "terminated_at",
    ]
    list_filter = ["state", "repository"]
    list_select_related = ["repository"]
    search_fields = ["repository__url"]
    show_full_result_count = False
    actions = ["stop_runs"]
    readonly_fields = [
        "repository",
        "state",
        "sessions",
        "threshold",
        "consecutive_empty_rounds",
        "rounds",
        "issues_found",
        "active_tasks",
        "started_tasks",
        "task_list",
        "last_check",
        "started_at",
        "terminated_at",
        "version",
        "updated_at",
    ]

    def has_add_permission(self, request) -> bool:
        """Unlike claims and board items, runs are started by operators."""
        return super(PerformTransitionsMixin, self).has_add_permission(request)

    def get_fields(self, request, obj=None):
        """Adding asks for what the operator chooses; the rest is the run's."""
        if obj is None:
            return BacklogRunForm.Meta.fields
        return super().get_fields(request, obj)

    def get_readonly_fields(self, request, obj=None):
        """A started run changes only through its rounds and Stop."""
        if obj is None:
            return ()
        return super().get_readonly_fields(request, obj)

    def get_queryset(self, request: HttpRequest) -> QuerySet[BacklogRun]:
        # Counted in the changelist's one query, so 30 rows cost what 3 do.
        return (
            super()
            .get_queryset(request)
            .annotate(
                started_task_count=Count("tasks", distinct=True),
                active_task_count=Count(
                    "tasks",
                    filter=~Q(tasks__status__in=TERMINAL_STATUSES),
                    distinct=True,
                ),
            )
        )

    @admin.display(description="started tasks", ordering="started_task_count")
    def started_tasks(self, run: BacklogRun) -> int:
        """How many tasks the run started in all."""
        return run.started_task_count

    @admin.display(description="tasks in progress", ordering="active_task_count")
    def active_tasks(self, run: BacklogRun) -> int:
        """How many of them are not finished (each holds a session)."""
        return run.active_task_count

    @admin.display(description="tasks")
    def task_list(self, run: BacklogRun) -> str:
        """The run's tasks with their issue and status (change page only)."""
        tasks = run.tasks.order_by("issue_number").only(
            "task_id", "issue_number", "status"
        )
        return ", ".join(
            f"#{task.issue_number} {task.task_id} ({task.status})" for task in tasks
        )

    def save_model(self, request, obj: BacklogRun, form, change) -> None:
        """Log who started the run, with the run's row."""
        if not change:
            obj.record(
                by=operator(request),
                reason=f"started with {obj.sessions} session(s), "
                f"threshold {obj.threshold}",
                target=BacklogState.RUNNING,
            )
        super().save_model(request, obj, form, change)

    @admin.action(description="Stop selected backlog runs")
    def stop_runs(self, request: HttpRequest, queryset: QuerySet[BacklogRun]) -> None:
        """End the selected live runs; a run's own tasks keep going."""
        stopped, skipped = 0, 0
        for run in queryset.filter(state__in=ACTIVE_STATES).select_related(
            "repository"
        ):
            try:
                run.perform("stop", by=operator(request))
            except (TransitionNotAllowed, VersionConflict):
                skipped += 1  # ended or played a round meanwhile
                continue
            stopped += 1
        self.message_user(request, f"Stopped {stopped} backlog run(s).")
        if skipped:
            self.message_user(
                request,
                f"{skipped} run(s) changed meanwhile and were left alone; try again.",
                messages.WARNING,
            )


@admin.register(BoardItem)
class BoardItemAdmin(PerformTransitionsMixin, admin.ModelAdmin):
    fsm_fields = ["status"]
    list_display = [
        "__str__",
        "repository",
        "item_id",
        "status",
        "added_at",
        "status_updated_at",
    ]
    list_filter = ["status", "project__repository"]
    list_select_related = ["project__repository"]
    search_fields = ["item_id", "project__repository__url"]
    show_full_result_count = False
    readonly_fields = [
        "project",
        "issue_number",
        "item_id",
        "status",
        "added_at",
        "status_updated_at",
        "version",
        "updated_at",
    ]

    @admin.display(ordering="project__repository__url")
    def repository(self, item: BoardItem):
        return item.project.repository


class BoardItemInline(admin.TabularInline):
    model = BoardItem
    fields = ["issue_number", "item_id", "status", "added_at", "status_updated_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(GitHubProject)
class GitHubProjectAdmin(admin.ModelAdmin):
    list_display = [
        "repository",
        "project_number",
        "project_id",
        "status_field_id",
        "updated_at",
    ]
    list_select_related = ["repository"]
    search_fields = ["project_id", "repository__url"]
    show_full_result_count = False
    inlines = [BoardItemInline]
