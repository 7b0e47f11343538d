"""Query-string filters of the repository list, and ?repository=<url>, which
every list of a repository's rows takes (tasks, claims, agent instances)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from codex.core.api.filters import ApiFilter, ChoiceListFilter, FilterSet
from codex.repositories.models import Forge, Repository, normalize_repository_url


class RepositoryUrlField(forms.Field):
    """A repository URL in any spelling intake accepts, normalised."""

    def to_python(self, value: Any) -> str | None:
        if value is None:
            return None
        try:
            return normalize_repository_url(value)
        except ValidationError as exc:
            # django-filter formats messages with %: pass the text as a param.
            raise ValidationError(
                [
                    ValidationError("%(message)s", params={"message": message})
                    for message in exc.messages
                ]
            ) from None


class RepositoryUrlFilter(ApiFilter):
    """?repository=<url>: the rows of that repository (`field_name` is the
    lookup of its URL, e.g. repository__url)."""

    field_class = RepositoryUrlField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("description", "A repository URL.")
        super().__init__(*args, **kwargs)


class RepositoryFilterSet(FilterSet):
    forge = ChoiceListFilter(field_name="forge", allowed=Forge.values)

    class Meta:
        model = Repository
        fields: list[str] = []
