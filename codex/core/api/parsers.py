"""The API's one request parser: JSON, bounded, with text PostgreSQL can store.

Every write of the API is JSON (a form-encoded or multipart body is 415), so
this is the only entry in REST_FRAMEWORK's DEFAULT_PARSER_CLASSES. It refuses,
with a 400 that says why, what would otherwise fail deeper down as a 500:

- a body larger than CODEX_API_MAX_BODY_BYTES (413; read no further than that);
- nesting deeper than CODEX_API_MAX_JSON_DEPTH (the json module would recurse
  until RecursionError);
- NaN and Infinity (not JSON; PostgreSQL's jsonb refuses them);
- text PostgreSQL cannot store: U+0000 (NUL) and lone surrogates (\\ud800), in
  keys and values alike.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser

DEFAULT_MAX_BODY_BYTES = 1_000_000
DEFAULT_MAX_DEPTH = 32
# A JSON string literal, escapes included: what the depth scan skips over.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


class PayloadTooLarge(exceptions.APIException):
    """413: the body is larger than the API reads."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"
    default_detail = "The request body is too large."


def json_depth(text: str) -> int:
    """How deeply the arrays and objects of a JSON text nest (strings skipped),
    computed without recursion."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub('""', text)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def unstorable_text(value: Any, path: str = "") -> str | None:
    """The path of the first string (key or value) PostgreSQL cannot store, or
    None. Depth is bounded by the caller, so recursing here is safe."""
    if isinstance(value, str):
        if "\x00" in value:
            return path or "(body)"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "(body)"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            found = unstorable_text(key, where) or unstorable_text(item, where)
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = unstorable_text(item, f"{path}[{index}]")
            if found:
                return found
    return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class StrictJSONParser(JSONParser):
    """JSONParser with the limits of the module docstring."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        limit = getattr(settings, "CODEX_API_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise exceptions.ParseError(f"The body is not {encoding} text.") from exc
        max_depth = getattr(settings, "CODEX_API_MAX_JSON_DEPTH", DEFAULT_MAX_DEPTH)
        if json_depth(text) > max_depth:
            raise exceptions.ParseError(
                f"JSON nested deeper than {max_depth} levels is not accepted."
            )
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except (ValueError, RecursionError) as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None
        where = unstorable_text(data)
        if where is not None:
            raise exceptions.ParseError(
                f"{where}: text may not contain NUL (U+0000) or unpaired "
                "surrogate characters."
            )
        return data
