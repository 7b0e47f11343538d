"""The github app takes GitHub's models into its state without touching their
tables: the issue and token caches (made by the configuration app), the
Projects board's ids (claims) and the App's installations (webhooks) keep
their tables and rows, which the old apps drop from their own states in
configuration 0003, claims 0003 and webhooks 0003. Their content types (and so
their permissions and admin log entries) move with them."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

MOVED = {
    "configuration": ("githubissue", "githubtoken"),
    "claims": ("githubproject",),
    "webhooks": ("githubinstallation",),
}


def _move_content_types(apps, schema_editor, *, forward: bool) -> None:
    content_types = apps.get_model("contenttypes", "ContentType").objects.using(
        schema_editor.connection.alias
    )
    for old_label, names in MOVED.items():
        source, target = (old_label, "github") if forward else ("github", old_label)
        for name in names:
            if content_types.filter(app_label=target, model=name).exists():
                continue
            content_types.filter(app_label=source, model=name).update(app_label=target)


def move_content_types(apps, schema_editor) -> None:
    _move_content_types(apps, schema_editor, forward=True)


def move_content_types_back(apps, schema_editor) -> None:
    _move_content_types(apps, schema_editor, forward=False)


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("repositories", "0009_monthly_cap"),
        # Where the tables were made.
        ("configuration", "0002_active_credential"),
        ("claims", "0002_backlogrun_tasks"),
        ("webhooks", "0002_raw_body_and_unprocessable"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="GitHubInstallation",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("installation_id", models.BigIntegerField(unique=True)),
                        ("account_login", models.CharField(blank=True, max_length=200)),
                        ("account_type", models.CharField(blank=True, max_length=40)),
                        ("app_id", models.BigIntegerField(blank=True, null=True)),
                        (
                            "repositories",
                            models.JSONField(
                                blank=True,
                                default=list,
                                help_text="full names, e.g. acme/web",
                            ),
                        ),
                        ("suspended", models.BooleanField(default=False)),
                        ("deleted", models.BooleanField(default=False)),
                        ("last_action", models.CharField(blank=True, max_length=60)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "verbose_name": "GitHub installation",
                        "db_table": "webhooks_githubinstallation",
                        "ordering": ["account_login", "installation_id"],
                    },
                ),
                migrations.CreateModel(
                    name="GitHubToken",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "version",
                            models.PositiveIntegerField(default=1, editable=False),
                        ),
                        (
                            "lease_holder",
                            models.CharField(
                                blank=True, editable=False, max_length=200, null=True
                            ),
                        ),
                        (
                            "lease_expires_at",
                            models.DateTimeField(blank=True, editable=False, null=True),
                        ),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "name",
                            models.CharField(
                                default="default", max_length=200, unique=True
                            ),
                        ),
                        (
                            "token_encrypted",
                            models.TextField(blank=True, editable=False),
                        ),
                        (
                            "expires_at",
                            models.DateTimeField(blank=True, editable=False, null=True),
                        ),
                        (
                            "refreshed_at",
                            models.DateTimeField(blank=True, editable=False, null=True),
                        ),
                    ],
                    options={
                        "verbose_name": "GitHub token (cached)",
                        "verbose_name_plural": "GitHub tokens (cached)",
                        "db_table": "configuration_githubtoken",
                        "ordering": ["name"],
                    },
                ),
                migrations.CreateModel(
                    name="GitHubProject",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "project_id",
                            models.CharField(
                                help_text='GraphQL node id, e.g. "PVT_kwDO...".',
                                max_length=100,
                                unique=True,
                            ),
                        ),
                        ("project_number", models.PositiveIntegerField()),
                        ("status_field_id", models.CharField(max_length=100)),
                        (
                            "todo_option_id",
                            models.CharField(
                                max_length=100, verbose_name="Todo option id"
                            ),
                        ),
                        (
                            "in_progress_option_id",
                            models.CharField(
                                max_length=100, verbose_name="In Progress option id"
                            ),
                        ),
                        (
                            "done_option_id",
                            models.CharField(
                                max_length=100, verbose_name="Done option id"
                            ),
                        ),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "repository",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="github_project",
                                to="repositories.repository",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "GitHub project",
                        "db_table": "claims_githubproject",
                        "ordering": ["repository"],
                    },
                ),
                migrations.CreateModel(
                    name="GitHubIssue",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("number", models.PositiveIntegerField()),
                        ("title", models.TextField()),
                        ("body", models.TextField(blank=True)),
                        (
                            "state",
                            models.CharField(
                                choices=[("open", "Open"), ("closed", "Closed")],
                                max_length=10,
                            ),
                        ),
                        ("assignee", models.CharField(blank=True, max_length=100)),
                        ("labels", models.JSONField(blank=True, default=list)),
                        ("created_at", models.DateTimeField(blank=True, null=True)),
                        ("updated_at", models.DateTimeField(blank=True, null=True)),
                        ("closed_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "synced_at",
                            models.DateTimeField(default=django.utils.timezone.now),
                        ),
                        (
                            "repository",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="github_issues",
                                to="repositories.repository",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "GitHub issue (cached)",
                        "verbose_name_plural": "GitHub issues (cached)",
                        "db_table": "configuration_githubissue",
                        "ordering": ["repository", "-number"],
                        "indexes": [
                            models.Index(
                                fields=["repository", "state"],
                                name="github_issue_state",
                            ),
                            models.Index(
                                fields=["repository", "updated_at"],
                                name="github_issue_updated",
                            ),
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("repository", "number"),
                                name="github_issue_unique_number",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
