"""Every model registered in the operator console has a change list (and, where
adding is allowed, an add form) that renders for an operator: a new model whose
admin breaks is caught here without a test of its own."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import reverse

pytestmark = pytest.mark.django_db

REGISTERED = sorted(
    (model._meta.app_label, model._meta.model_name) for model in admin.site._registry
)


def test_the_domain_is_in_the_console():
    """The domain's concepts all have an admin: every model is in the console."""
    names = {name for _, name in REGISTERED}
    assert {
        "task",
        "escalation",
        "artifact",
        "verificationreport",
        "reviewreport",
        "event",
        "issueclaim",
        "backlogrun",
        "agentinstance",
        "agentrun",
        "fanout",
        "setting",
        "notification",
        "repository",
        "apitoken",
    } <= names


@pytest.mark.parametrize(("app_label", "model_name"), REGISTERED)
def test_the_change_list_renders(console, app_label, model_name):
    url = reverse(f"admin:{app_label}_{model_name}_changelist")
    response = console.get(url)
    assert response.status_code == 200, url
    response = console.get(url, {"q": "x"})
    assert response.status_code == 200, url


@pytest.mark.parametrize(("app_label", "model_name"), REGISTERED)
def test_the_add_form_renders_where_adding_is_allowed(console, app_label, model_name):
    model_admin = next(
        model_admin
        for model, model_admin in admin.site._registry.items()
        if (model._meta.app_label, model._meta.model_name) == (app_label, model_name)
    )
    url = reverse(f"admin:{app_label}_{model_name}_add")
    response = console.get(url)
    request = response.wsgi_request
    if model_admin.has_add_permission(request):
        assert response.status_code == 200, url
    else:
        assert response.status_code == 403, url
