"""The operator console at 1280 pixels: every list fits the window (no
horizontal scrolling), and the index starts with the Attention block and the
daily work."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.urls import reverse

from tests.browser.conftest import PASSWORD, screenshot
from tests.factories import make_task, make_user, put_in_state

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def console_page(page, live_server):
    operator = make_user("root", is_staff=True, is_superuser=True)
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", operator.username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(re.compile(r".*/admin/$"))
    return page


def test_the_index_and_every_list_fit_1280_pixels(console_page, live_server):
    page = console_page
    task = make_task(title="A task with a long enough title to need some room " * 2)
    put_in_state(task, status="blocked", blocked_reason="forge down")
    page.goto(f"{live_server.url}/admin/")
    screenshot(page, "console-index")
    headings = page.locator("#content-main caption").all_inner_texts()
    assert headings[0].strip().lower() == "daily work"
    assert "1 task blocked." in page.inner_text(".attention")

    too_wide = {}
    for model in admin.site._registry:
        url = reverse(
            f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"
        )
        page.goto(f"{live_server.url}{url}")
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - window.innerWidth"
        )
        if overflow > 0:
            too_wide[url] = overflow
            screenshot(page, f"too-wide-{model._meta.model_name}")
    page.goto(f"{live_server.url}{reverse('admin:tasks_task_changelist')}")
    screenshot(page, "console-task-list")
    assert not too_wide, too_wide
