"""What every operator-console page with a state machine shares."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django_fsm.admin import FSMAdminMixin


class CodexFSMAdminMixin(FSMAdminMixin):
    """django-fsm-2's admin buttons, but a transition page for a name that is not
    an operator-visible transition of the model is a 404, not a server error."""

    def fsm_transition_view(
        self, request: HttpRequest, object_id: str, transition_name: str, **kwargs: Any
    ) -> HttpResponse:
        method = getattr(self.model, transition_name, None)
        transitions = getattr(getattr(method, "_django_fsm", None), "transitions", None)
        if not transitions:
            raise Http404(f"{transition_name!r} is not a transition")
        if isinstance(transitions, dict):
            transitions = list(transitions.values())
        if not self.is_fsm_transition_visible(transitions[0]):
            raise Http404(f"{transition_name!r} is not an operator action")
        return super().fsm_transition_view(
            request, object_id, transition_name, **kwargs
        )
