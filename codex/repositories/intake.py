"""The repository URLs intake accepts: repositories of the configured GitHub.

A client of intake (the API, the request form) names a repository by URL, and
Codex then fetches it with its GitHub credentials. So the URL is held to what
GitHub itself would serve, and anything else is refused with a reason:

- https only, at exactly the configured GitHub's host (github.com, or the
  host of GITHUB_BASE_URL for Enterprise: integrations.github.origin), on the
  default port, with no user info, query or fragment;
- the host compared as written and after IDNA decoding, so look-alikes (a
  Cyrillic letter, its xn-- punycode, a trailing dot) never equal it;
- owner and name in GitHub's own character set and lengths (docs/ on
  repositories: owners are ASCII letters, digits and single inner hyphens, up
  to 39; names ASCII letters, digits, `-`, `_` and `.`, up to 100, never `.`
  or `..`), written out: no percent-encoding, no hidden characters;
- normalised: host and owner lowercase (GitHub ignores their case), a
  trailing `.git` or slash dropped.

Other hosts and the local forge are registered by an operator (the console's
`normalize_repository_url`), who vouches for them.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import unicodedata
from typing import NamedTuple, NoReturn
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

from codex.repositories.models import normalize_repository_url
from integrations.github.origin import web_origin

OWNER_PATTERN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$")
NAME_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
OWNER_MAX_LENGTH = 39
NAME_MAX_LENGTH = 100
URL_MAX_LENGTH = 300
LOCAL_REFUSAL = "Local repositories are registered by an operator in the console."
# Unicode categories never legitimately in a URL someone typed: controls,
# format characters (bidi overrides, zero-width), private use, unassigned,
# surrogates, and separators other than the space.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp", "Zs"})


def _refuse(reason: str) -> NoReturn:
    raise ValidationError(reason, code="repository_url")


def intake_repository_url(url: str) -> str:
    """The canonical URL of a repository of the configured GitHub, e.g.
    https://github.com/acme/web. Raises ValidationError with the reason
    for anything else (see the module docstring)."""
    origin = web_origin()
    example = f"{origin}/owner/name"
    text = (url or "").strip()
    if not text:
        _refuse("A repository URL is required.")
    if len(text) > URL_MAX_LENGTH:
        _refuse(f"A repository URL has at most {URL_MAX_LENGTH} characters.")
    for char in text:
        if unicodedata.category(char) in HIDDEN_CATEGORIES or char == " ":
            _refuse(
                "A repository URL cannot contain spaces, control or invisible "
                f"characters (found U+{ord(char):04X})."
            )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        _refuse(f"The repository URL does not parse ({exc}); use {example}.")
    if parts.scheme.lower() == "file":
        _refuse(LOCAL_REFUSAL)
    if parts.scheme.lower() != "https":
        _refuse(f"A repository URL must look like {example} (https only).")
    if "@" in parts.netloc:
        _refuse("A repository URL must not contain user info or credentials.")
    _check_host(parts.hostname or "", origin.host)
    if port not in (None, origin.port) or parts.netloc.endswith(":"):
        _refuse(f"A repository URL must not name a port; use {example}.")
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        _refuse(f"A repository URL has no query or fragment; use {example}.")
    owner, name = _owner_and_name(parts.path, example)
    return f"{origin}/{owner.lower()}/{name}"


def _check_host(host: str, expected: str) -> None:
    if not host:
        _refuse("A repository URL must name a host.")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        _refuse(f"Repositories are named by GitHub's host ({expected}), not an IP.")
    if host.endswith("."):
        _refuse(f"The host must be exactly {expected} (no trailing dot).")
    decoded = _idna_decoded(host)
    if host != expected or decoded != expected:
        shown = decoded if decoded == host else f"{host}, that is {decoded}"
        _refuse(
            f"Intake accepts repositories of {expected} only, not {shown}; "
            "other hosts are registered by an operator."
        )


def _idna_decoded(host: str) -> str:
    """The host in Unicode (xn-- labels decoded), or the host as given when it
    does not decode (then it differs from the expected ASCII host anyway)."""
    try:
        return host.encode("idna").decode("idna")
    except UnicodeError:
        return host


def _owner_and_name(path: str, example: str) -> tuple[str, str]:
    if "%" in path:
        _refuse("A repository URL must be written out, without percent-encoding.")
    path = path.removesuffix("/")
    path = path.removesuffix(".git")
    segments = path.split("/")[1:]
    if len(segments) != 2 or not all(segments):
        _refuse(
            f"A repository URL must name an owner and a repository, like {example}."
        )
    owner, name = segments
    if not OWNER_PATTERN.match(owner):
        _refuse(
            f"The owner {owner!r} is not a GitHub account name: ASCII letters, "
            f"digits and single inner hyphens, at most {OWNER_MAX_LENGTH}."
        )
    if name in (".", "..") or not NAME_PATTERN.match(name):
        _refuse(
            f"The name {name!r} is not a GitHub repository name: ASCII letters, "
            f"digits, '-', '_' and '.', at most {NAME_MAX_LENGTH}, not '.' or '..'."
        )
    return owner, name


class IntakeUrl(NamedTuple):
    """What intake makes of a repository URL someone gave.

    `canonical` is the URL to register (None when refused, `refusal` then says
    why); `candidates` are the spellings a registered repository may be
    stored under, canonical first: rows from before owners were lowercased
    keep the owner's case, and an operator may have registered the URL as
    given (another host, the local forge).
    """

    canonical: str | None
    refusal: ValidationError | None
    candidates: tuple[str, ...]


def read_intake_url(url: str) -> IntakeUrl:
    """Read `url` as intake does (see IntakeUrl): a refusal is in the
    answer, never raised. The reading depends only on the URL and the
    configured GitHub, so the last ones read are kept: every POST
    /api/tasks/ reads one, mostly one of a few, and reading one cost about
    0.05 ms of the POST's CPU."""
    return _read_intake_url(url, settings.GITHUB_BASE_URL)


@functools.lru_cache(maxsize=512)
def _read_intake_url(url: str, github_base_url: str) -> IntakeUrl:
    canonical, refusal = None, None
    try:
        canonical = intake_repository_url(url)
    except ValidationError as exc:
        refusal = exc
    candidates = [canonical] if canonical else []
    try:
        given = normalize_repository_url(url)
    except ValidationError:
        given = None
    if given and given not in candidates:
        candidates.append(given)
    return IntakeUrl(canonical, refusal, tuple(candidates))
