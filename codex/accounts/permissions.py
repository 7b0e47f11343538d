"""Who may do what, in one place: the API and the team pages ask the same rules.

Three roles (README "Roles"):

- operators (`is_staff`): everything;
- team members (the "team" group): read everything, create tasks and resolve
  escalations;
- integrators (the "integrator" group, or any user with neither role): create
  tasks and read the tasks they created, without escalation content (an
  escalation's questions and answers are between the team and the agents).

`RULES` names, per action, the roles allowed; `may(user, action)` asks it.
Each API view names one permission class below (the roles of an action for
reads, GET/HEAD/OPTIONS, and of another for writes, POST); each page names its
action to `codex.accounts.decorators.allowed_to`. `visible_tasks` and
`sees_escalations` narrow what an allowed role is shown. DRF answers 401 to a
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


STAFF = frozenset({OPERATOR, TEAM})
OPERATORS = frozenset({OPERATOR})

# action → the roles that may do it (pages and API alike).
RULES: dict[str, frozenset[str]] = {
    "task.read": ALL_ROLES,  # narrowed by visible_tasks
    "task.create": ALL_ROLES,
    "task.control": OPERATORS,  # pause, resume, cancel, retry
    "task.read_all": STAFF,  # every task, not only one's own
    "dashboard.read": ALL_ROLES,
    "escalation.read": STAFF,
    "escalation.resolve": STAFF,
    # Gates and steering (docs/gates.md): people with write access.
    "task.decide_gate": STAFF,  # approve a plan or a merge, request changes
    "task.steer": STAFF,  # send the agents a message
    "repository.read": STAFF,
    "repository.register": OPERATORS,
    "operations.read": STAFF,  # agents, runs, claims, backlog, child reports
    "nothing": frozenset(),
}


def may(user, action: str) -> bool:
    """Whether `user` may do `action` (a key of RULES)."""
    return bool(roles_of(user) & RULES[action])


def sees_escalations(user) -> bool:
    """Whether `user` may read escalations' questions and answers."""
    return may(user, "escalation.read")


def visible_tasks(user, queryset):
    """The tasks of `queryset` that `user` may see: all of them for the team and
    operators, the ones it requested for an integrator."""
    if may(user, "task.read_all"):
        return queryset
    if not may(user, "task.read"):
        return queryset.none()
    return queryset.filter(requested_by=user)


class RolePermission(BasePermission):
    """Allow the roles in `read` to read and those in `write` to write (each
    the roles of one action of RULES)."""

    read: frozenset[str] = frozenset()
    write: frozenset[str] = frozenset()
    message = "Your role does not allow this."

    def has_permission(self, request, view) -> bool:
        allowed = self.read if request.method in SAFE_METHODS else self.write
        return bool(roles_of(request.user) & allowed)


class TaskPermission(RolePermission):
    """Tasks: everyone creates and reads (an integrator its own only)."""

    read = RULES["task.read"]
    write = RULES["task.create"]


class TaskControlPermission(RolePermission):
    """Pause, resume, cancel and retry a task: operators."""

    read = RULES["task.control"]
    write = RULES["task.control"]


class EscalationPermission(RolePermission):
    """Escalations: the team and operators read and resolve them."""

    read = RULES["escalation.read"]
    write = RULES["escalation.resolve"]


class GatePermission(RolePermission):
    """Approve a task's plan or merge, or ask for changes: the team and
    operators (never the requester alone: a guard of the gate)."""

    read = RULES["task.read"]
    write = RULES["task.decide_gate"]


class SteerPermission(RolePermission):
    """Send a message to a task's agents: the team and operators."""

    read = RULES["task.read"]
    write = RULES["task.steer"]


class RepositoryPermission(RolePermission):
    """Repositories: the team reads; operators register them."""

    read = RULES["repository.read"]
    write = RULES["repository.register"]


class OperationsReadPermission(RolePermission):
    """Agents, runs, claims, backlog runs, child reports: read by the team and
    operators; nothing in them is written through the API."""

    read = RULES["operations.read"]
    write = RULES["nothing"]


# -- what an integrator is not shown ------------------------------------------------

HIDDEN = "(escalation details are shown to the team only)"
_ESCALATED = "escalated"


def is_about_an_escalation(event) -> bool:
    """Whether an event of a task's log carries an escalation's questions or
    answer: the escalation events, and the transitions into and out of
    `escalated` (their reason is the question or the person's resolution)."""
    return event.kind == "escalation" or _ESCALATED in (event.source, event.target)


def redact_events(user, events):
    """`events` as `user` may see them: an escalation's questions and answers
    blanked (in memory only) for a role that may not read escalations."""
    if sees_escalations(user):
        return events
    for event in events:
        if is_about_an_escalation(event):
            event.reason = HIDDEN
            event.data = {
                key: value
                for key, value in (event.data or {}).items()
                if key == "transition"
            }
    return events
