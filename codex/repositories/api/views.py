"""API views of repositories: operators register them, the team reads them."""

from __future__ import annotations

from rest_framework import mixins
from rest_framework.request import Request
from rest_framework.response import Response

from codex.accounts.permissions import RepositoryPermission
from codex.core.api.idempotency import idempotent
from codex.core.api.views import ReadOnlyApiViewSet
from codex.repositories.api.filtersets import RepositoryFilterSet
from codex.repositories.api.serializers import RepositorySerializer
from codex.repositories.models import Repository


class RepositoryViewSet(mixins.CreateModelMixin, ReadOnlyApiViewSet):
    """Repositories: the list, one by its id, and POST (operators): register one."""

    serializer_class = RepositorySerializer
    permission_classes = [RepositoryPermission]
    queryset = Repository.objects.all()
    filterset_class = RepositoryFilterSet

    @idempotent
    def create(self, request: Request, *args, **kwargs) -> Response:
        response = super().create(request, *args, **kwargs)
        response["Location"] = f"/api/repositories/{response.data['id']}/"
        return response
