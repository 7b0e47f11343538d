"""Typed readers for environment variables that fail loudly on bad values.

Settings read every knob through these helpers so that a typo in a deployment
(`DEBUG=ture`, `CODEX_WORKERS=two`) stops the process at start-up with the name
of the variable, instead of silently running with a default.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str, environ: Mapping[str, str] | None = None) -> str:
    """A string variable; unset means `default`."""
    value = _raw(name, environ)
    return default if value is None else value


def env_bool(
    name: str, default: bool, environ: Mapping[str, str] | None = None
) -> bool:
    """A boolean written as 1/0, true/false, yes/no or on/off."""
    value = _raw(name, environ)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={value!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off"
    )


def env_int(
    name: str,
    default: int,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """An integer, optionally bounded; out-of-range values are refused."""
    value = _raw(name, environ)
    if value is None or value == "":
        result = default
    else:
        try:
            result = int(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None
    if minimum is not None and result < minimum:
        raise ImproperlyConfigured(f"{name}={result} is below the minimum {minimum}")
    if maximum is not None and result > maximum:
        raise ImproperlyConfigured(f"{name}={result} is above the maximum {maximum}")
    return result


def env_list(
    name: str, default: list[str], environ: Mapping[str, str] | None = None
) -> list[str]:
    """A comma-separated list; blanks between commas are dropped."""
    value = _raw(name, environ)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_pairs(name: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Comma-separated KEY=VALUE items as a dict; unset means {}.

    The value is everything after the first `=` (it may hold more). An item
    with no `=` is refused rather than dropped: it is a typo that would
    otherwise quietly leave a variable out.
    """
    pairs: dict[str, str] = {}
    for item in env_list(name, [], environ):
        key, equals, value = item.partition("=")
        if not equals:
            raise ImproperlyConfigured(
                f"{name}: item {item!r} is not KEY=VALUE (items are comma-separated)"
            )
        pairs[key] = value
    return pairs


def env_amount(
    name: str,
    default: str,
    *,
    minimum: Decimal = Decimal(0),
    environ: Mapping[str, str] | None = None,
) -> Decimal:
    """A decimal amount (dollars, say) of at least `minimum`; unset means `default`."""
    raw = env_str(name, default, environ)
    try:
        amount = Decimal(raw)
        # NaN lands in the except too: ordering it signals InvalidOperation.
        if amount >= minimum:
            return amount
    except InvalidOperation:
        pass
    raise ImproperlyConfigured(f"{name}={raw!r} is not an amount >= {minimum}")


def env_choice(
    name: str,
    default: str,
    choices: tuple[str, ...],
    environ: Mapping[str, str] | None = None,
) -> str:
    """A string that must be one of `choices`."""
    value = env_str(name, default, environ)
    if value not in choices:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not one of {', '.join(choices)}"
        )
    return value


def kept_key(path: Path, make: Callable[[], str]) -> tuple[str, bool]:
    """The key stored in `path`, made with `make` and written (mode 0600) when
    the file does not exist yet. Returns (key, whether it was made now).

    The file is created exclusively: web and worker starting together read
    the one key whichever of them made it, never two different ones.
    """
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        # Written right after creation; a reader that comes between waits.
        for _ in range(50):
            key = path.read_text().strip()
            if key:
                return key, False
            time.sleep(0.02)
        raise ImproperlyConfigured(
            f"{path} is empty; delete it to make a new key (stored secrets made "
            "with the old one cannot be read)"
        ) from None
    key = make()
    with os.fdopen(descriptor, "w") as handle:
        handle.write(key + "\n")
    return key, True
