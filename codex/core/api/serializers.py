"""What the API's serializers share: strict input, and fields built once
per class for the hot paths."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import tzinfo
from operator import attrgetter
from typing import Any

from django.conf import settings
from django.utils import timezone
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


class PrebuiltFieldsMixin:
    """Build a serializer's fields once per class, for a hot path.

    ModelSerializer re-derives every field from the model for each instance
    (about 0.4 ms for a task's 25 fields, a tenth of a POST /api/tasks/); the
    derivation depends only on the class, so it is done once per class. Only
    for a serializer whose fields do not depend on its instance or context.

    Each instance needs fields of its own (binding sets their parent and
    source), but not DRF's deep copy, which re-runs every field's __init__
    (about 1 ms per task answer). A read-only field is never validated, and a
    scalar field's validation reads its settings without changing them, while
    binding only assigns attributes: a shallow copy of the unbound field is
    enough. A field holding other fields (a list's child, a nested
    serializer, a relation) still gets a deep copy: its children are bound to it.

    A serializer whose fields are all read-only scalars or method fields
    (an answer, such as a task's) is represented straight from the built
    fields, none copied or bound: a scalar field's to_representation reads
    only its own settings. Any other serializer is represented by DRF.
    """

    def get_fields(self) -> dict[str, serializers.Field]:
        return {name: _fresh(field) for name, field in _built_fields(self).items()}

    def to_representation(self, instance: Any) -> dict[str, Any]:
        cls = type(self)
        readers = cls.__dict__.get("_readers")
        if readers is None:
            readers = cls._readers = _readers(_built_fields(self))  # type: ignore[attr-defined]
        if readers:
            # DRF asks for the current time zone once per time field.
            zone = timezone.get_current_timezone() if settings.USE_TZ else None
            try:
                return {name: read(self, instance, zone) for name, read in readers}
            except NotPlain:
                pass
        return super().to_representation(instance)  # type: ignore[misc]


class NotPlain(Exception):
    """A source DRF reads in its own way (a missing attribute or key, or a
    callable it calls): the instance is represented by DRF."""


def _built_fields(serializer: serializers.Serializer) -> dict[str, serializers.Field]:
    cls = type(serializer)
    built = cls.__dict__.get("_prebuilt_fields")
    if built is None:
        built = super(PrebuiltFieldsMixin, serializer).get_fields()  # type: ignore[misc]
        cls._prebuilt_fields = built  # type: ignore[attr-defined]
    return built


# (the serializer, the instance, the current time zone) -> the value
Reader = Callable[[serializers.Serializer, Any, tzinfo | None], Any]


def _readers(fields: dict[str, serializers.Field]) -> list[tuple[str, Reader]]:
    """How to read each field from an instance, as DRF's to_representation
    does (a None value stays None); empty when a field is not a read-only
    scalar or method field, for DRF to represent the serializer itself."""
    readers: list[tuple[str, Reader]] = []
    for name, field in fields.items():
        if isinstance(field, serializers.SerializerMethodField):
            readers.append((name, _method_reader(field.method_name or f"get_{name}")))
            continue
        source = field.source or name
        readable = field.read_only and isinstance(field, READABLE_FIELDS)
        if not readable or source == "*":
            return []
        represent = (
            _in_current_zone(field)
            if isinstance(field, serializers.DateTimeField)
            else _as_field_does(field)
        )
        readers.append((name, _value_reader(attrgetter(source), represent)))
    return readers


def _method_reader(method_name: str) -> Reader:
    return lambda serializer, instance, zone: getattr(serializer, method_name)(instance)


def _value_reader(
    read: Callable[[Any], Any], represent: Callable[[Any, tzinfo | None], Any]
) -> Reader:
    def reader(serializer: serializers.Serializer, instance: Any, zone) -> Any:
        try:
            value = read(instance)
        except (AttributeError, KeyError):
            raise NotPlain from None
        if value is None:
            return None
        if callable(value):
            raise NotPlain
        return represent(value, zone)

    return reader


def _as_field_does(field: serializers.Field) -> Callable[[Any, tzinfo | None], Any]:
    return lambda value, zone: field.to_representation(value)


def _in_current_zone(
    field: serializers.DateTimeField,
) -> Callable[[Any, tzinfo | None], Any]:
    """The time field's own to_representation, given the current time zone
    rather than asking for it (DRF asks asgiref at every value: a third of a
    task answer's CPU): a copy of the field per zone holds it as the field's
    `timezone`, which DRF reads before asking. A field given a time zone of
    its own keeps it."""
    if hasattr(field, "timezone"):
        return _as_field_does(field)
    in_zone: dict[tzinfo, serializers.DateTimeField] = {}

    def represent(value: Any, zone: tzinfo | None) -> Any:
        if zone is None:
            return field.to_representation(value)
        zoned = in_zone.get(zone)
        if zoned is None:
            zoned = copy.copy(field)
            zoned.timezone = zone
            in_zone[zone] = zoned
        return zoned.to_representation(value)

    return represent


# Fields with no field inside them, whose validation changes nothing on them.
SCALAR_FIELDS = (
    serializers.BooleanField,
    serializers.CharField,
    serializers.ChoiceField,
    serializers.DateTimeField,
    serializers.DecimalField,
    serializers.FloatField,
    serializers.IntegerField,
    serializers.UUIDField,
)
# Read straight from the built fields: no field inside, nothing bound read.
READABLE_FIELDS = (*SCALAR_FIELDS, serializers.JSONField, serializers.ReadOnlyField)


def _fresh(field: serializers.Field) -> serializers.Field:
    if isinstance(field, serializers.BaseSerializer):
        return copy.deepcopy(field)
    if field.read_only or isinstance(field, SCALAR_FIELDS):
        return copy.copy(field)
    return copy.deepcopy(field)
