"""Who may do what through the API, in one place.

Three roles (issue 7):

- operators (`is_staff`): everything;
- team members (the "team" group): read everything and resolve escalations;
- integrators (the "integrator" group, or any user with neither role): create
  and read tasks, nothing else.

Each view names one permission class below; a class is the roles allowed to read
(GET, HEAD, OPTIONS) and the roles allowed to write (POST). DRF answers 401 to a
caller without valid credentials and 403 to one whose role is not listed.
"""

from __future__ import annotations

from collections.abc import Iterable

from rest_framework.permissions import SAFE_METHODS, BasePermission

OPERATOR = "operator"
TEAM = "team"
INTEGRATOR = "integrator"
ROLE_GROUPS = (TEAM, INTEGRATOR)
ALL_ROLES = frozenset({OPERATOR, TEAM, INTEGRATOR})
_CACHE_ATTRIBUTE = "_codex_api_roles"


def roles_of(user) -> frozenset[str]:
    """The API roles of `user`; empty for anonymous or inactive callers."""
    if user is None or not user.is_authenticated or not user.is_active:
        return frozenset()
    cached = getattr(user, _CACHE_ATTRIBUTE, None)
    if cached is not None:
        return cached
    groups = user.groups.filter(name__in=ROLE_GROUPS).values_list("name", flat=True)
    return remember_roles(user, groups)


def remember_roles(user, role_groups: Iterable[str]) -> frozenset[str]:
    """Compute `user`'s roles from the role groups they belong to and keep them
    on the user for the rest of the request.

    Token authentication reads the groups in its own query (ApiToken.objects.
    authenticate), so an API request needs no group query of its own.
    """
    roles = set(role_groups) & set(ROLE_GROUPS)
    if user.is_staff:
        roles.add(OPERATOR)
    if not roles:
        # A token an operator issued to a client without further say: the
        # narrowest role, so a forgotten group never grants more.
        roles.add(INTEGRATOR)
    result = frozenset(roles)
    setattr(user, _CACHE_ATTRIBUTE, result)
    return result


class RolePermission(BasePermission):
    """Allow the roles in `read` to read and those in `write` to write."""

    read: frozenset[str] = frozenset()
    write: frozenset[str] = frozenset()
    message = "Your role does not allow this."

    def has_permission(self, request, view) -> bool:
        allowed = self.read if request.method in SAFE_METHODS else self.write
        return bool(roles_of(request.user) & allowed)


class TaskPermission(RolePermission):
    """Tasks: everyone reads; integrators and operators create."""

    read = ALL_ROLES
    write = frozenset({OPERATOR, INTEGRATOR})


class TaskControlPermission(RolePermission):
    """Pause, resume, cancel and retry a task: operators."""

    read = frozenset({OPERATOR})
    write = frozenset({OPERATOR})


class EscalationPermission(RolePermission):
    """Escalations: the team and operators read and resolve them."""

    read = frozenset({OPERATOR, TEAM})
    write = frozenset({OPERATOR, TEAM})


class RepositoryPermission(RolePermission):
    """Repositories: the team reads; operators register them."""

    read = frozenset({OPERATOR, TEAM})
    write = frozenset({OPERATOR})


class OperationsReadPermission(RolePermission):
    """Agents, runs, claims, backlog runs, child reports: read by the team and
    operators; nothing in them is written through the API."""

    read = frozenset({OPERATOR, TEAM})
    write = frozenset()
