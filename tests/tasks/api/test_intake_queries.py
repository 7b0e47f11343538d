"""What one POST /api/tasks/ costs in SQL (the intake benchmark, figure 1).

Query counts are deterministic, so they are the regression test for intake's
speed; bench/intake.py measures the time. Under pytest-django's `db` fixture the
test runs inside a transaction, so the retry point of create_from_request shows
up as a SAVEPOINT pair.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext

from codex.accounts.models import ApiToken
from codex.repositories.models import Repository
from codex.tasks.models import Task
from tests.core.api.conftest import token_client
from tests.factories import make_repository, make_user

pytestmark = pytest.mark.django_db

URL = "/api/tasks/"
BODY = {
    "repository": "https://github.com/acme/shop",
    "title": "Add a wish list",
    "description": "As a shopper I want to save items for later.",
    "priority": "high",
    "acceptance_criteria": "- Items can be saved",
}
# Token (with user and role groups), repository, then the task, its creation
# event and its first step's job row: on PostgreSQL one statement (a
# data-modifying CTE), elsewhere three INSERTs. The SAVEPOINT pair is the retry
# point create_from_request keeps inside a caller's transaction (here the
# test's); outside one, the one statement needs no BEGIN/COMMIT either.
CREATE_QUERIES = 5 if connection.vendor == "postgresql" else 7
KEYED_CREATE_QUERIES = CREATE_QUERIES + 4
# A replay: token, the record (under its savepoint pair), the task it names and
# what the answer reads; never an INSERT.
REPLAY_QUERIES = 8


@pytest.fixture
def client():
    make_repository(BODY["repository"])
    team, _ = Group.objects.get_or_create(name="integrator")
    user = make_user()
    user.groups.add(team)
    api = token_client(user)
    # The first request stamps the token's last_used_at (once per 5 minutes).
    assert api.get("/api/tasks/?status=completed").status_code == 200
    return api


def sql(queries: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in queries.captured_queries]


def test_create_costs_a_fixed_handful_of_queries(
    client, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    with (
        django_capture_on_commit_callbacks() as callbacks,
        django_assert_max_num_queries(CREATE_QUERIES) as queries,
    ):
        response = client.post(URL, BODY, format="json")
    assert response.status_code == 201, response.content
    assert callbacks == []  # the first step's job row is written with the task
    statements = sql(queries)
    tables = " ".join(statements)
    assert "django_q_ormq" in tables
    if connection.vendor == "postgresql":
        [created] = [s for s in statements if s.startswith("WITH")]
        for table in ("tasks_task", "events_event", "django_q_ormq"):
            assert f'INSERT INTO "{table}"' in created
    # Authentication and roles in one query; nothing else reads tokens or groups.
    assert sum("accounts_apitoken" in s for s in statements) == 1
    assert "auth_user_groups" in statements[0]
    assert not [s for s in statements[1:] if "auth_" in s]
    # No Idempotency-Key: no idempotency record is read or written.
    assert "accounts_idempotencyrecord" not in tables
    # The answer is built from the created task: nothing is read back.
    assert sum(s.startswith("SELECT") for s in statements) == 2
    assert sum(s.startswith("UPDATE") for s in statements) == 0


def test_create_with_a_new_key_adds_only_the_claim_and_the_answer(
    client, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    with (
        django_capture_on_commit_callbacks(),
        django_assert_max_num_queries(KEYED_CREATE_QUERIES) as queries,
    ):
        response = client.post(
            URL, BODY, format="json", headers={"Idempotency-Key": "a"}
        )
    assert response.status_code == 201, response.content
    record_statements = [
        s.split()[0] for s in sql(queries) if "accounts_idempotencyrecord" in s
    ]
    # Claimed by INSERT first, no SELECT ... FOR UPDATE on the usual path.
    assert record_statements == ["INSERT", "UPDATE"]


def test_a_replay_reads_the_record_and_creates_nothing(
    client, django_assert_max_num_queries
):
    headers = {"Idempotency-Key": "b"}
    first = client.post(URL, BODY, format="json", headers=headers)
    with django_assert_max_num_queries(REPLAY_QUERIES) as queries:
        again = client.post(URL, BODY, format="json", headers=headers)
    assert again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["task_id"] == first.json()["task_id"]
    assert Task.objects.count() == 1
    assert not [s for s in sql(queries) if s.startswith('INSERT INTO "tasks_task"')]


def test_the_token_query_reads_the_users_role_groups(django_assert_num_queries):
    user = make_user()
    team, _ = Group.objects.get_or_create(name="team")
    Group.objects.get_or_create(name="integrator")
    other, _ = Group.objects.get_or_create(name="other")
    user.groups.add(team, other)
    token, key = ApiToken.issue(user, "tests")
    with django_assert_num_queries(1):
        found = ApiToken.objects.authenticate(key, role_groups=["team", "integrator"])
        assert found.user == user
    assert found == token
    assert found.user_role_groups == {"team"}
    assert ApiToken.objects.authenticate("not-the-key") is None
    token.revoke()
    assert ApiToken.objects.authenticate(key) is None


def test_intake_reads_only_what_it_needs_of_the_repository():
    # The detected environment and the workers' settings can be large, and
    # every POST reads the repository: intake leaves them in the database.
    repository = make_repository(BODY["repository"])
    found = Repository.objects.at_url(repository.url)
    assert found == repository
    assert found.accepts_tasks and found.url == repository.url
    deferred = found.get_deferred_fields()
    assert {"detected_environment", "test_command", "setup_command"} <= deferred
    assert not {"url", "accepts_tasks", "registered_on_first_use"} & deferred
