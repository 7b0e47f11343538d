"""The values every export writes the same way (docs/domain/tasks.md#exports):
timestamps in ISO 8601 UTC with a Z, and the objects of a JSON list."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def timestamp(value: datetime | str | None) -> str | None:
    """Export timestamps: ISO 8601 in UTC with a Z."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def objects(value: Any) -> list[dict[str, Any]]:
    """The objects of a JSON list; anything else is no objects."""
    return [item for item in value if isinstance(item, dict)] if value else []
