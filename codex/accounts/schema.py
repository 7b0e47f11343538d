"""How the API document describes the accounts' token authentication
(drf-spectacular finds an extension by its class, registered on import from
AccountsConfig.ready)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from codex.accounts.authentication import HashedTokenAuthentication


class HashedTokenScheme(OpenApiAuthenticationExtension):
    """Describes `Authorization: Token <key>` (HashedTokenAuthentication)."""

    target_class = HashedTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": 'Token authentication: "Token <key>". Operators issue '
            "and revoke keys in the console.",
        }
