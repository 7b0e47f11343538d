"""The lookups every API request makes are compiled to SQL once
(codex.core.store.compiled_query) and still answer like the querysets they replace."""

from __future__ import annotations

from unittest import mock

import pytest
from django.db.models.sql.compiler import SQLCompiler
from django.utils import timezone

from codex.accounts.models import ApiToken
from codex.accounts.permissions import ROLE_GROUPS
from codex.core.store.compiled_query import CompiledQuery
from codex.repositories.models import Repository
from codex.tasks.api.serializers import repository_by_url
from tests.factories import make_repository, make_user

pytestmark = pytest.mark.django_db


def _compilations(call):
    with mock.patch.object(
        SQLCompiler, "as_sql", autospec=True, side_effect=SQLCompiler.as_sql
    ) as as_sql:
        result = call()
    return result, as_sql.call_count


def test_a_token_is_found_with_its_user_and_roles_without_compiling_again():
    user = make_user(role="team")
    _, key = ApiToken.issue(user, "ci")
    ApiToken.objects.authenticate(key, role_groups=ROLE_GROUPS)  # compiles once
    token, compilations = _compilations(
        lambda: ApiToken.objects.authenticate(key, role_groups=ROLE_GROUPS)
    )
    assert compilations == 0
    assert token.user == user and token.user.username == user.username
    assert token.user_role_groups == {"team"}
    assert token.created_at.tzinfo is not None  # the backend's converters ran


def test_an_unknown_or_revoked_key_finds_no_token():
    token, key = ApiToken.issue(make_user(), "ci")
    assert ApiToken.objects.authenticate("not-a-key", role_groups=ROLE_GROUPS) is None
    token.revoke()
    assert ApiToken.objects.authenticate(key, role_groups=ROLE_GROUPS) is None


def test_the_repository_lookup_answers_like_the_queryset():
    repository = make_repository("https://github.com/acme/compiled")
    found, _ = _compilations(lambda: repository_by_url(repository.url))
    assert found == repository
    assert found.accepts_tasks == repository.accepts_tasks
    again, compilations = _compilations(lambda: repository_by_url(repository.url))
    assert again == repository and compilations == 0
    assert repository_by_url("https://github.com/acme/none") is None


def test_the_slot_must_be_exactly_one_parameter():
    with pytest.raises(ValueError, match="exactly one parameter"):
        CompiledQuery(Repository.objects.filter(url="a"), "b")
    before = timezone.now()
    with pytest.raises(ValueError):
        CompiledQuery(
            Repository.objects.filter(
                url="a", created_at__gte=before, test_command="a"
            ),
            "a",
        )
