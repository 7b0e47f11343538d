"""The database cache's table (CACHES["throttle"] without REDIS_URL): API
throttle counts shared by every web process. `migrate` makes it, so `make run`
and a fresh deployment need no separate `createcachetable`."""

from django.core.management import call_command
from django.db import migrations


def create_cache_table(apps, schema_editor):
    # createcachetable skips tables that exist and caches that are not
    # database caches (Redis configured).
    call_command("createcachetable", database=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0003_worker_clusters"),
    ]

    operations = [
        migrations.RunPython(create_cache_table, migrations.RunPython.noop),
    ]
