"""Every claims changelist costs the same number of queries for 3 rows and 30."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.claims.factories import (
    claimed,
    make_backlog_run,
    make_board_item,
    make_project,
)
from tests.factories import make_repository

pytestmark = pytest.mark.django_db


def make_claims(count: int) -> None:
    for _ in range(count):
        claimed(make_repository())


def make_runs(count: int) -> None:
    for _ in range(count):
        make_backlog_run(make_repository())


def make_projects(count: int) -> None:
    for _ in range(count):
        make_project(make_repository())


def make_items(count: int) -> None:
    for _ in range(count):
        make_board_item(make_project(make_repository()))


@pytest.mark.parametrize(
    ("url_name", "make"),
    [
        ("admin:claims_issueclaim_changelist", make_claims),
        ("admin:claims_backlogrun_changelist", make_runs),
        ("admin:github_githubproject_changelist", make_projects),
        ("admin:claims_boarditem_changelist", make_items),
    ],
)
def test_3_rows_and_30_rows_cost_the_same(
    console, django_assert_max_num_queries, url_name, make
):
    url = reverse(url_name)
    make(3)
    with CaptureQueriesContext(connection) as three:
        response = console.get(url)
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == 3

    make(27)
    with django_assert_max_num_queries(len(three)):
        response = console.get(url)
    assert len(response.context["cl"].result_list) == 30
