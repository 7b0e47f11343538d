"""Template context: the signed-in person's roles, so pages show only the links
they may follow (the views check again: codex.accounts.decorators)."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from codex.accounts.permissions import roles_of


def roles(request: HttpRequest) -> dict[str, object]:
    """`codex_roles`: a set of "operator", "team", "integrator" (lazy: pages
    that never ask cost no query)."""
    return {"codex_roles": SimpleLazyObject(lambda: roles_of(request.user))}
