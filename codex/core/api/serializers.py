"""What every write serializer of the API shares: strict input."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, serializers


class StrictInputMixin:
    """A write serializer that takes its fields as they are documented.

    DRF ignores fields it does not know (a typo such as "priorty" would be
    dropped in silence) and turns numbers into text ("title": 123 is stored as
    "123"). Both are a 400 here: unknown fields by name, and a text field
    (or a list of text) given anything but strings.
    """

    def to_internal_value(self, data):
        if isinstance(data, dict):
            errors: dict[str, list[str]] = {}
            writable = {
                name for name, field in self.fields.items() if not field.read_only
            }
            for name in data:
                if name not in writable:
                    errors[str(name)] = ["Unknown field."]
            for name, field in self.fields.items():
                if name in data and not field.read_only:
                    problem = _not_text(field, data[name])
                    if problem:
                        errors[name] = [problem]
            if errors:
                raise exceptions.ValidationError(errors)
        return super().to_internal_value(data)  # type: ignore[misc]


def _not_text(field: serializers.Field, value: Any) -> str | None:
    """Why `value` is not what the text field `field` takes, or None."""
    if isinstance(field, serializers.ChoiceField):
        return None if isinstance(value, str) else "Must be a string."
    if isinstance(field, serializers.CharField):
        if value is None:
            return None  # DRF's own null check answers
        return None if isinstance(value, str) else "Must be a string."
    text_list = isinstance(field, serializers.ListField) and isinstance(
        field.child, serializers.CharField
    )
    items = value if text_list and isinstance(value, list) else []
    if not all(isinstance(item, str) for item in items):
        return "Every item must be a string."
    return None
