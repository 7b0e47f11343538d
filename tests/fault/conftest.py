"""Fixtures of the fault and attacker suite: clients per role, a clean cache."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.test import Client

from tests.factories import make_user

ROLES = ("team", "integrator", "operator")


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Throttle counts live in the cache, which outlives a test's database."""
    cache.clear()
    yield
    cache.clear()


def make_role_user(role: str, username: str | None = None):
    """A user of `role`: operator (staff superuser), team or integrator."""
    if role == "operator":
        return make_user(username, is_staff=True, is_superuser=True)
    user = make_user(username)
    group, _ = Group.objects.get_or_create(name=role)
    user.groups.add(group)
    return user


@pytest.fixture
def role_users(db):
    return {role: make_role_user(role) for role in ROLES}


@pytest.fixture
def session_clients(role_users):
    """A signed-in browser client per role, and an anonymous one (None)."""
    clients = {None: Client()}
    for role, user in role_users.items():
        client = Client()
        client.force_login(user)
        clients[role] = client
    return clients
