"""The REST API: authentication, pagination, limits and the schema."""

from __future__ import annotations

from codex.env import env_int, env_str

# --- REST API --------------------------------------------------------------
# Reverse proxies in front of Codex: X-Forwarded-For is trusted that many hops
# deep for the client's address (throttles, sign-in lockout); 0 trusts none,
# so a client cannot pick its own address with the header.
CODEX_PROXY_COUNT = env_int("CODEX_PROXY_COUNT", 0, minimum=0)
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "codex.accounts.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "codex.core.api.pagination.NewestFirstCursorPagination",
    "PAGE_SIZE": env_int("CODEX_API_PAGE_SIZE", 50, minimum=1, maximum=500),
    "EXCEPTION_HANDLER": "codex.core.api.errors.exception_handler",
    # Writes are JSON only (415 otherwise), bounded and storable (parsers.py).
    "DEFAULT_PARSER_CLASSES": ["codex.core.api.parsers.StrictJSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "NUM_PROXIES": CODEX_PROXY_COUNT,
    "DEFAULT_SCHEMA_CLASS": "codex.core.api.schema.ApiSchema",
    "UNAUTHENTICATED_USER": None,
}

CODEX_API_USER_RATE = env_str("CODEX_API_USER_RATE", "600/minute")
CODEX_API_ANON_RATE = env_str("CODEX_API_ANON_RATE", "60/minute")
# Requests with a wrong or revoked token, per address.
CODEX_API_FAILED_AUTH_RATE = env_str("CODEX_API_FAILED_AUTH_RATE", "20/minute")
CODEX_API_MAX_BODY_BYTES = env_int(
    "CODEX_API_MAX_BODY_BYTES", 1_000_000, minimum=10_000
)
CODEX_API_MAX_JSON_DEPTH = env_int("CODEX_API_MAX_JSON_DEPTH", 32, minimum=4)
CODEX_IDEMPOTENCY_TTL_HOURS = env_int("CODEX_IDEMPOTENCY_TTL_HOURS", 24, minimum=1)
SPECTACULAR_SETTINGS = {
    "TITLE": "Codex API",
    "DESCRIPTION": (
        "Tasks, escalations, repositories and the agents working on them. "
        "Authenticate with `Authorization: Token <key>`. Errors have one shape: "
        '`{"error": {"code", "message", "fields"}}`. POSTs accept an '
        "Idempotency-Key header."
    ),
    "VERSION": "1.0.0",
    "ENUM_NAME_OVERRIDES": {
        "TaskStatusEnum": "codex.tasks.models.choices.Status",
        "AgentInstanceStatusEnum": "codex.fleet.models.choices.InstanceStatus",
        "AgentRunStatusEnum": "codex.fleet.models.choices.RunStatus",
        "ClaimStateEnum": "codex.claims.models.claim.ClaimState",
        "BacklogStateEnum": "codex.claims.models.backlog.BacklogState",
        "RecommendationEnum": "codex.tasks.models.reports.Recommendation",
    },
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
