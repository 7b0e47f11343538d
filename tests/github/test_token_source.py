"""The GitHub client reads no codex model: the github app gives it its token
through a TokenSource when it is ready."""

from __future__ import annotations

import pytest

from codex.core.errors import Action, ClassifiedFailure
from codex.github.models import GitHubToken
from codex.github.tokens import CodexTokens
from integrations.github import tokens
from integrations.github.client import github_token
from tests.integrations.github.conftest import TOKENS

pytestmark = pytest.mark.django_db


def test_the_github_app_gives_the_client_its_token_source():
    assert isinstance(tokens.token_source(), CodexTokens)
    assert github_token() == TOKENS[0]


def test_without_a_token_source_the_client_asks_for_a_person(monkeypatch):
    monkeypatch.setattr(tokens, "_source", None)

    with pytest.raises(ClassifiedFailure) as caught:
        github_token()

    assert caught.value.action is Action.MANUAL_REVIEW
    assert "codex.github" in str(caught.value)


def test_a_refused_personal_token_leaves_the_installation_cache_alone():
    GitHubToken.get_or_refresh(lambda: ("ghs_cached_installation_token", None))

    CodexTokens().refused()

    assert GitHubToken.objects.get().is_fresh()
