"""GET /api/tasks/: newest first, cursor-paginated, filtered."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.core.api.conftest import assert_error_shape
from tests.factories import make_repository, make_task, put_in_state

pytestmark = pytest.mark.django_db

URL = "/api/tasks/"


def task_ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["task_id"] for item in response.json()["results"]]


def test_lists_newest_first(api_client):
    tasks = [make_task(title=f"Task {n}") for n in range(4)]
    assert task_ids(api_client.get(URL)) == [t.task_id for t in reversed(tasks)]


def test_list_items_carry_the_request_and_state(api_client):
    task = make_task(title="Show me")
    item = api_client.get(URL).json()["results"][0]
    assert item["task_id"] == task.task_id
    assert item["request"]["title"] == "Show me"
    assert item["repository"] == task.repository.url
    assert item["status"] == "pending"
    assert item["lease"] is None
    assert item["feedback_loops"]["verification"]["cycle_count"] == 0


def test_cursor_pagination_walks_every_task_once(api_client):
    tasks = [make_task() for _ in range(5)]
    expected = [t.task_id for t in reversed(tasks)]
    response = api_client.get(URL, {"page_size": 2})
    seen: list[str] = []
    pages = 0
    while True:
        data = response.json()
        assert set(data) >= {"results", "next"}
        assert len(data["results"]) <= 2
        seen += task_ids(response)
        pages += 1
        if data["next"] is None:
            break
        assert "cursor=" in data["next"]
        response = api_client.get(data["next"])
    assert pages == 3
    assert seen == expected


def test_empty_list(api_client):
    data = api_client.get(URL).json()
    assert data["results"] == []
    assert data["next"] is None


def test_filter_by_status_and_comma_separated_values(api_client):
    pending = make_task()
    blocked = put_in_state(make_task(), status="blocked", phase="planning")
    paused = put_in_state(make_task(), status="paused", phase="review")
    assert task_ids(api_client.get(URL, {"status": "blocked"})) == [blocked.task_id]
    assert task_ids(api_client.get(URL, {"status": "blocked, paused"})) == [
        paused.task_id,
        blocked.task_id,
    ]
    assert task_ids(api_client.get(URL, {"status": "pending"})) == [pending.task_id]


def test_filter_by_phase(api_client):
    make_task()
    review = put_in_state(make_task(), status="in_progress", phase="review")
    assert task_ids(api_client.get(URL, {"phase": "review"})) == [review.task_id]
    assert len(task_ids(api_client.get(URL, {"phase": "intake,review"}))) == 2


def test_filter_by_priority(api_client):
    low = make_task(priority="low")
    critical = make_task(priority="critical")
    make_task(priority="medium")
    assert task_ids(api_client.get(URL, {"priority": "low"})) == [low.task_id]
    assert task_ids(api_client.get(URL, {"priority": "critical,low"})) == [
        critical.task_id,
        low.task_id,
    ]


def test_filter_by_created_by(api_client):
    from_api = make_task(created_by="api")
    from_form = make_task(created_by="form")
    assert task_ids(api_client.get(URL, {"created_by": "form"})) == [from_form.task_id]
    assert task_ids(api_client.get(URL, {"created_by": "api"})) == [from_api.task_id]
    assert len(task_ids(api_client.get(URL, {"created_by": "api,form"}))) == 2


def test_filter_by_repository_url(api_client):
    shop = make_repository("https://github.com/acme/shop")
    mine = make_task(repository=shop)
    make_task(repository=make_repository("https://github.com/acme/other"))
    for url in (
        "https://github.com/acme/shop",
        "https://github.com/acme/shop.git",
        "https://GITHUB.com/acme/shop/",
    ):
        assert task_ids(api_client.get(URL, {"repository": url})) == [mine.task_id]
    assert task_ids(api_client.get(URL, {"repository": "https://x.org/a/b"})) == []


def test_filters_combine(api_client):
    target = put_in_state(make_task(priority="high"), status="blocked")
    put_in_state(make_task(priority="low"), status="blocked")
    make_task(priority="high")
    response = api_client.get(URL, {"status": "blocked", "priority": "high"})
    assert task_ids(response) == [target.task_id]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"status": "sleeping"}, "status"),
        ({"status": "blocked,sleeping"}, "status"),
        ({"status": ""}, "status"),
        ({"status": ","}, "status"),
        ({"phase": "deploy"}, "phase"),
        ({"priority": "urgent"}, "priority"),
        ({"created_by": "robot"}, "created_by"),
        ({"repository": "not a url"}, "repository"),
        ({"repository": "https://github.com/only-owner"}, "repository"),
    ],
)
def test_unknown_filter_value_is_400(api_client, params, field):
    make_task()
    error = assert_error_shape(api_client.get(URL, params), 400, "invalid")
    assert list(error["fields"]) == [field]
    assert error["fields"][field]


def test_list_query_count_does_not_grow_with_the_number_of_tasks(
    api_client, django_assert_max_num_queries
):
    for _ in range(5):
        put_in_state(make_task(), status="in_progress").acquire_lease("worker:x")
    api_client.get(URL)  # the first use of a token records last_used_at
    with CaptureQueriesContext(connection) as five:
        assert len(task_ids(api_client.get(URL))) == 5
    for _ in range(25):
        put_in_state(make_task(), status="in_progress").acquire_lease("worker:y")
    with django_assert_max_num_queries(len(five.captured_queries)):
        assert len(task_ids(api_client.get(URL))) == 30
