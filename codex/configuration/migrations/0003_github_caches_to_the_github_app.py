"""GitHubIssue and GitHubToken move to the github app (github 0001) with their
tables (`configuration_githubissue`, `configuration_githubtoken`) and rows:
configuration drops them from its state. Nothing changes in the database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("configuration", "0002_active_credential"),
        ("github", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="GitHubToken"),
                migrations.DeleteModel(name="GitHubIssue"),
            ],
            database_operations=[],
        ),
    ]
