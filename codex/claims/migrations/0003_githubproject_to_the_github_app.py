"""GitHubProject moves to the github app (github 0001) with its table
`claims_githubproject` and its rows: the board items' foreign key points at it
there, and claims drops it from its state. Nothing changes in the database."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0002_backlogrun_tasks"),
        ("github", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="boarditem",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="items",
                        to="github.githubproject",
                    ),
                ),
                migrations.DeleteModel(name="GitHubProject"),
            ],
            database_operations=[],
        ),
    ]
