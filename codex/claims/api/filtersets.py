"""Query-string filters of the claim and backlog run lists."""

from __future__ import annotations

from codex.claims.models import BacklogRun, BacklogState, ClaimState, IssueClaim
from codex.core.api.filters import ChoiceListFilter, FilterSet
from codex.repositories.api.filtersets import RepositoryUrlFilter


class IssueClaimFilterSet(FilterSet):
    state = ChoiceListFilter(field_name="state", allowed=ClaimState.values)
    repository = RepositoryUrlFilter(field_name="repository__url")

    class Meta:
        model = IssueClaim
        fields: list[str] = []


class BacklogRunFilterSet(FilterSet):
    state = ChoiceListFilter(field_name="state", allowed=BacklogState.values)
    repository = RepositoryUrlFilter(field_name="repository__url")

    class Meta:
        model = BacklogRun
        fields: list[str] = []
