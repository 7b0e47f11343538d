"""A task's creation is one statement of 60-odd parameters (the task, its
event, its job row). psycopg parses a statement's text once and keeps it only
up to a number of parameters; codex.core.store.statements raises that bound, so a
second creation is not parsed again (it was 6 % of a POST /api/tasks/)."""

from __future__ import annotations

import pytest

from tests.factories import make_repository, make_task

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db]


def test_the_second_creation_reuses_the_parsed_statement():
    from django.db import connection
    from psycopg import _queries

    # The parse kept is the server-binding one unless that is turned off.
    options = connection.settings_dict["OPTIONS"]
    cache = (
        _queries._query2pg
        if options.get("server_side_binding")
        else _queries._query2pg_client
    )
    repository = make_repository()
    make_task(repository)
    parsed = cache.cache_info()
    make_task(repository)
    again = cache.cache_info()
    assert again.misses == parsed.misses
    assert again.hits > parsed.hits
