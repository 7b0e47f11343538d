"""The API's query-string filters: django-filter FilterSets with Codex's rules.

A list view names its `filterset_class`; `FilterBackend` applies it. Every bad
parameter is named in one 400 (`{"fields": {"status": [...], ...}}`). The
filters here read the raw value (no trimming unless said) and describe
themselves in the OpenAPI schema (`ApiFilter.openapi_parameter`), so the
schema says what the filter takes, in Codex's words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

# The ?task= parameter of every list that filters by task (tasks, runs,
# instances, children): one description in the schema.
TASK_PARAMETER_DESCRIPTION = "A task id (FEAT-YYYYMMDD-xxxxxx)."


def unknown_value(values: str, allowed: Sequence[str]) -> ValidationError:
    """The 400 message of a value outside `allowed`.

    The text goes through `params`: django-filter formats every message with
    `%`, so a `%` the client sent must not reach the format string.
    """
    return ValidationError(
        "Unknown value %(values)s; use one of %(allowed)s.",
        code="invalid",
        params={"values": values, "allowed": ", ".join(allowed)},
    )


class ApiFilter(django_filters.Filter):
    """A filter that describes itself as one OpenAPI query parameter."""

    def __init__(
        self,
        *args: Any,
        description: str = "",
        enum: Sequence[str] | None = None,
        default: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.description, self.enum, self.default = description, enum, default

    def openapi_parameter(self, name: str) -> OpenApiParameter:
        """The parameter `?name=` as the schema shows it."""
        extra: dict[str, Any] = {}
        if self.description:
            extra["description"] = self.description
        if self.enum is not None:
            extra["enum"] = list(self.enum)
        if self.default is not None:
            extra["default"] = self.default
        return OpenApiParameter(name, OpenApiTypes.STR, **extra)


# -- form fields: what a raw query-string value becomes ------------------------------


class RawTextField(forms.Field):
    """The value as sent (None when the parameter is absent)."""

    def to_python(self, value: Any) -> str | None:
        return value


class StrippedTextField(forms.Field):
    """The value without surrounding spaces; an empty one still counts."""

    def to_python(self, value: Any) -> str | None:
        return None if value is None else value.strip()


class ChoiceListField(forms.Field):
    """?name=a,b: comma-separated values, each one of `allowed` (an empty list
    is an error too: `?status=` is a mistake, not "no filter")."""

    def __init__(self, *, allowed: Sequence[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.allowed = list(allowed)

    def to_python(self, value: Any) -> list[str] | None:
        if value is None:
            return None
        values = [item.strip() for item in value.split(",") if item.strip()]
        unknown = [item for item in values if item not in self.allowed]
        if unknown or not values:
            raise unknown_value(", ".join(unknown) or "(empty)", self.allowed)
        return values


class OneChoiceField(forms.Field):
    """?name=value: exactly one of `allowed`, `default` when absent."""

    def __init__(
        self,
        *,
        allowed: Sequence[str],
        default: str | None = None,
        error_message: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.allowed, self.default = list(allowed), default
        self.error_message = error_message

    def to_python(self, value: Any) -> str | None:
        if value is None:
            value = self.default
        if value is not None and value not in self.allowed:
            if self.error_message:
                raise ValidationError(
                    "%(message)s", params={"message": self.error_message}
                )
            raise unknown_value(value, self.allowed)
        return value


# -- filters --------------------------------------------------------------------------


class ChoiceListFilter(ApiFilter):
    """?name=a,b (any of the values, from a fixed list): `field_name__in`."""

    field_class = ChoiceListField

    def __init__(self, *args: Any, allowed: Sequence[str], **kwargs: Any) -> None:
        kwargs.setdefault(
            "description", f"Comma-separated; any of {', '.join(allowed)}."
        )
        super().__init__(*args, lookup_expr="in", allowed=allowed, **kwargs)


class TextFilter(ApiFilter):
    """?name=text, exactly as sent; an empty value does not filter."""

    field_class = RawTextField


class IdentifierFilter(ApiFilter):
    """?name=id: an identifier, trimmed, matched exactly (an empty one too, which
    then matches nothing)."""

    field_class = StrippedTextField

    def filter(self, qs: QuerySet, value: str | None) -> QuerySet:
        if value is None:
            return qs
        return qs.filter(**{self.field_name: value})


class OneChoiceFilter(ApiFilter):
    """?name=value, one of `allowed`, `default` when absent (`error_message`
    replaces the usual "Unknown value" one); `method(queryset, name, value)`
    decides what each value keeps."""

    field_class = OneChoiceField

    def __init__(
        self,
        *args: Any,
        allowed: Sequence[str],
        default: str | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("enum", allowed)
        super().__init__(*args, allowed=allowed, default=default, **kwargs)
        self.extra["default"] = default  # the form field's too


class FilterSet(django_filters.FilterSet):
    """The base of every API FilterSet."""

    @classmethod
    def openapi_parameters(cls) -> list[OpenApiParameter]:
        """The query parameters of a list this FilterSet filters."""
        return [
            query_filter.openapi_parameter(name)
            for name, query_filter in cls.base_filters.items()
            if isinstance(query_filter, ApiFilter)
        ]


class FilterBackend(DjangoFilterBackend):
    """django-filter's DRF backend; the browsable API shows no filter form (its
    template app is not installed: the API is JSON for clients)."""

    def to_html(self, request, queryset, view):
        return None
