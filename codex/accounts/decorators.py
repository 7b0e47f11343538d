"""The team pages follow the same roles as the API (codex.accounts.permissions).

A page view names the roles that may use it; an anonymous browser is sent to
the sign-in page (as `login_required` does), a signed-in person whose role is
not listed gets a 403 page that says which roles may use it, so nobody is left
guessing why a link does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from codex.accounts.permissions import roles_of


def roles_required(*roles: str) -> Callable:
    """Allow signed-in people holding any of `roles` (see permissions.roles_of)."""
    allowed = frozenset(roles)

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not roles_of(request.user) & allowed:
                return render(
                    request,
                    "codex/forbidden.html",
                    {"allowed": sorted(allowed)},
                    status=403,
                )
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


def allowed_to(action: str) -> Callable:
    """Allow the roles that codex.accounts.permissions.RULES gives `action`:
    the same rule the API's permission class of that action asks."""
    from codex.accounts.permissions import RULES

    return roles_required(*RULES[action])
