"""The API's cursor pagination: stable pages over growing tables."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.pagination import CursorPagination


class NewestFirstCursorPagination(CursorPagination):
    """Stable pages over growing tables: a cursor on the primary key, newest first.

    A cursor is base64 the client can forge: its position is checked against
    the ordering field (an id must be an integer the database can hold) so a
    crafted one is the 404 "Invalid cursor" of any bad cursor, not a 500.
    """

    ordering = "-id"
    page_size_query_param = "page_size"
    max_page_size = 500

    def paginate_queryset(self, queryset, request, view=None):
        self._cursor_model = queryset.model
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request):
        cursor = super().decode_cursor(request)
        if cursor is None or cursor.position is None:
            return cursor
        ordering = self.ordering
        name = (ordering if isinstance(ordering, str) else ordering[0]).lstrip("-")
        model = getattr(self, "_cursor_model", None)
        if model is not None and not _storable_position(model, name, cursor.position):
            raise exceptions.NotFound(self.invalid_cursor_message)
        return cursor


_BIGINT_MAX = 2**63 - 1


def _storable_position(model, name: str, position: str) -> bool:
    """Whether a cursor's position is a value of the ordering field."""
    field = model._meta.get_field(name)
    if "\x00" in position:
        return False
    try:
        value = field.to_python(position)
    except (DjangoValidationError, TypeError, ValueError):
        return False
    return not isinstance(value, int) or abs(value) <= _BIGINT_MAX


class OldestFirstCursorPagination(NewestFirstCursorPagination):
    """For logs read as a story (a task's events): in the order they happened."""

    ordering = "id"
