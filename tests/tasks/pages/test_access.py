"""Every team page needs a signed-in person; the login page signs them in."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def page_urls():
    task = make_task()
    return [
        reverse("pages:dashboard"),
        reverse("pages:request_form"),
        reverse("pages:inbox"),
        reverse("pages:task", args=[task.task_id]),
        reverse("pages:task_fragment", args=[task.task_id]),
    ]


def test_anonymous_visitors_are_sent_to_the_login_page(client, page_urls):
    for url in page_urls:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/?next="), url


def test_anonymous_posts_create_nothing(client):
    response = client.post(reverse("pages:inbox"))
    assert response.status_code in (302, 405)
    response = client.post(reverse("pages:resolve", args=[1]), {})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_site_root_goes_to_the_dashboard(member_client):
    response = member_client.get("/")
    assert response.status_code == 302
    assert response["Location"] == reverse("pages:dashboard")


def test_login_page_signs_in_and_lands_on_the_dashboard(client, member):
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert b'name="csrfmiddlewaretoken"' in page.content

    response = client.post(
        "/accounts/login/", {"username": "bob", "password": "pw-12345!"}
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("pages:dashboard")
    assert client.get(reverse("pages:dashboard")).status_code == 200


def test_login_honours_next(client, member):
    target = reverse("pages:inbox")
    response = client.post(
        f"/accounts/login/?next={target}",
        {"username": "bob", "password": "pw-12345!", "next": target},
    )
    assert response["Location"] == target


def test_wrong_password_shows_an_error(client, member):
    response = client.post("/accounts/login/", {"username": "bob", "password": "no"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


def test_nav_links_every_page_of_the_role(member_client):
    content = member_client.get(reverse("pages:dashboard")).content.decode()
    for url in (
        reverse("pages:request_form"),
        reverse("pages:inbox"),
        reverse("pages:dashboard"),
    ):
        assert f'href="{url}"' in content
    # Sign out is a POST (Django 5 refuses GET logouts).
    assert 'action="/accounts/logout/"' in content


def test_nav_links_the_console_for_operators(console):
    content = console.get(reverse("pages:dashboard")).content.decode()
    assert 'href="/admin/"' in content


def test_sign_out(member_client):
    response = member_client.post("/accounts/logout/")
    assert response.status_code == 302
    assert member_client.get(reverse("pages:inbox")).status_code == 302
