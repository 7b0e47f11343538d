"""IdempotencyRecord moves from accounts to core (codex.core.api.idempotency_record)
without touching its table: core takes the model into its state here, keeping
the table `accounts_idempotencyrecord` with its rows, and accounts drops it from
its own state in accounts 0003. The content type (and so its permissions) moves
with it."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def move_content_type(from_label: str, to_label: str):
    def move(apps, schema_editor):
        content_types = apps.get_model("contenttypes", "ContentType").objects.using(
            schema_editor.connection.alias
        )
        if content_types.filter(app_label=to_label, model="idempotencyrecord").exists():
            return
        content_types.filter(app_label=from_label, model="idempotencyrecord").update(
            app_label=to_label
        )

    return move


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0004_throttle_cache_table"),
        # The table was made there.
        ("accounts", "0002_idempotencyrecord"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="IdempotencyRecord",
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
                        ("key", models.CharField(max_length=200)),
                        ("request_hash", models.CharField(max_length=64)),
                        ("method", models.CharField(max_length=10)),
                        ("path", models.CharField(max_length=500)),
                        ("response_status", models.PositiveSmallIntegerField()),
                        ("response_body", models.JSONField(blank=True, null=True)),
                        (
                            "response_location",
                            models.CharField(blank=True, max_length=500),
                        ),
                        (
                            "created_at",
                            models.DateTimeField(
                                default=django.utils.timezone.now, editable=False
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "accounts_idempotencyrecord",
                        "indexes": [
                            models.Index(
                                fields=["created_at"], name="idempotency_created"
                            )
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("user", "key"),
                                name="idempotency_one_record_per_user_key",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(
            move_content_type("accounts", "core"),
            move_content_type("core", "accounts"),
        ),
    ]
