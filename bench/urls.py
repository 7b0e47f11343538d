"""Codex's URLs plus the bare ceiling of the intake figure (bench.bare)."""

from django.urls import path

from bench.bare import PATH, BareTaskCreate
from codex.urls import handler400, handler404, handler500  # noqa: F401
from codex.urls import urlpatterns as codex_urlpatterns

urlpatterns = [path(PATH, BareTaskCreate.as_view()), *codex_urlpatterns]
