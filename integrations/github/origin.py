"""Which GitHub Codex is configured for, as web origins (no PyGithub here).

The API origin is GITHUB_BASE_URL's; the web origin (where repositories are
cloned from and what intake accepts) follows from it:

- https://api.github.com → https://github.com;
- GitHub Enterprise Server, https://HOST/api/v3 → https://HOST;
- GitHub Enterprise Cloud with data residency, https://api.SUB.ghe.com →
  https://SUB.ghe.com.

Both are read from configuration only: credentials are attached to these
origins and never to one read from a stored repository URL.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings

from integrations.git.credentials import Origin, origin_of

PUBLIC_API_HOST = "api.github.com"
PUBLIC_WEB_HOST = "github.com"
ENTERPRISE_API_PATH = "/api/v3"


class GitHubNotConfigured(ValueError):
    """GITHUB_BASE_URL is not an https URL."""


def api_origin() -> Origin:
    """The origin of GITHUB_BASE_URL (where PyGithub sends the token)."""
    origin = origin_of(settings.GITHUB_BASE_URL)
    if origin is None or origin.scheme != "https":
        raise GitHubNotConfigured(
            f"GITHUB_BASE_URL must be an https URL, not {settings.GITHUB_BASE_URL!r}"
        )
    return origin


def web_origin() -> Origin:
    """The origin of the configured GitHub's repositories (see the module
    docstring): what intake accepts and git's credential is scoped to."""
    origin = api_origin()
    path = urlsplit(settings.GITHUB_BASE_URL).path.rstrip("/")
    host = origin.host
    if host == PUBLIC_API_HOST:
        host = PUBLIC_WEB_HOST
    elif host.startswith("api.") and not path.endswith(ENTERPRISE_API_PATH):
        host = host.removeprefix("api.")
    return origin._replace(host=host)


def is_on_configured_github(url: str) -> bool:
    """Whether `url` (a repository or clone URL) is at the configured GitHub's
    web origin, exactly (scheme, host, port)."""
    return origin_of(url) == web_origin()
