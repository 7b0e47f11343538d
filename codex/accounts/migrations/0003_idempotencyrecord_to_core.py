"""IdempotencyRecord now belongs to core (core 0005 took it over with its table,
`accounts_idempotencyrecord`): accounts forgets it without dropping the table."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_idempotencyrecord"),
        ("core", "0005_idempotencyrecord"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="IdempotencyRecord")],
            database_operations=[],
        ),
    ]
