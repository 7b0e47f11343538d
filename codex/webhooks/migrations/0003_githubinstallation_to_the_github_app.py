"""GitHubInstallation moves to the github app (github 0001) with its table
`webhooks_githubinstallation` and its rows: webhooks drops it from its state.
Nothing changes in the database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0002_raw_body_and_unprocessable"),
        ("github", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="GitHubInstallation")],
            database_operations=[],
        ),
    ]
