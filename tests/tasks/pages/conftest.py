"""Fixtures of the team pages' tests: a signed-in team member (not staff)."""

from __future__ import annotations

import pytest

from tests.factories import make_user


@pytest.fixture
def member(db):
    return make_user("bob", role="team")


@pytest.fixture
def member_client(client, member):
    client.force_login(member)
    return client
