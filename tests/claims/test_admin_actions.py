"""Operators release claims, expire stale ones and press transition buttons."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from codex.claims.models import BacklogState, BoardStatus, ClaimState, IssueClaim
from codex.events.models import Event
from tests.admin_forms import form_data
from tests.claims.factories import (
    backdate,
    claimed,
    make_backlog_run,
    make_board_item,
    make_claim,
)
from tests.factories import make_repository

pytestmark = pytest.mark.django_db

CLAIMS = reverse("admin:claims_issueclaim_changelist")


def buttons(html: str) -> set[str]:
    return set(re.findall(r'name="_fsm_transition_to"\s+value="([a-z_]+)"', html))


def press(console, url_name: str, obj, form_id: str, name: str):
    url = reverse(url_name, args=[obj.pk])
    page = console.get(url)
    data = form_data(page.content.decode(), form_id)
    data["_fsm_transition_to"] = [name]
    return console.post(url, data)


def test_release_claim_action_frees_claimed_issues_and_logs_who(console):
    repository = make_repository()
    held = claimed(repository)
    free = make_claim(repository)

    response = console.post(
        CLAIMS,
        {"action": "release_claims", "_selected_action": [held.pk, free.pk]},
        follow=True,
    )

    assert response.status_code == 200
    held.refresh_from_db()
    assert held.state == ClaimState.RELEASED and not held.issue_closed
    event = Event.objects.filter(subject=held.event_subject).last()
    assert (event.actor, event.target) == ("user:alice", "released")
    assert IssueClaim.objects.get(pk=free.pk).state == ClaimState.UNCLAIMED


def test_expire_action_expires_only_stale_claims(console):
    stale = backdate(claimed(), timezone.now() - timedelta(minutes=1))
    live = claimed()
    console.post(
        CLAIMS,
        {"action": "expire_stale_claims", "_selected_action": [stale.pk, live.pk]},
    )
    assert IssueClaim.objects.get(pk=stale.pk).state == ClaimState.UNCLAIMED
    assert IssueClaim.objects.get(pk=live.pk).state == ClaimState.CLAIMED


def test_changelist_filters_stale_and_searches_by_number(console):
    stale = backdate(claimed(), timezone.now() - timedelta(minutes=1))
    live = claimed(number=4242)
    shown = console.get(CLAIMS, {"stale": "yes"}).context["cl"].result_list
    assert list(shown) == [stale]
    shown = console.get(CLAIMS, {"q": "#4242"}).context["cl"].result_list
    assert list(shown) == [live]


def test_claim_page_offers_operator_transitions_only(console):
    claim = claimed()
    page = console.get(reverse("admin:claims_issueclaim_change", args=[claim.pk]))
    assert buttons(page.content.decode()) == {"release", "fail"}


def test_block_button_blocks_and_logs_the_operator(console):
    claim = make_claim()
    press(console, "admin:claims_issueclaim_change", claim, "issueclaim_form", "block")
    claim.refresh_from_db()
    assert claim.state == ClaimState.BLOCKED
    assert Event.objects.filter(subject=claim.event_subject).last().actor == (
        "user:alice"
    )


def test_stop_button_terminates_a_backlog_run(console):
    run = make_backlog_run()
    press(console, "admin:claims_backlogrun_change", run, "backlogrun_form", "stop")
    run.refresh_from_db()
    assert run.state == BacklogState.TERMINATED


def test_board_item_button_moves_the_card(console):
    item = make_board_item()
    press(console, "admin:claims_boarditem_change", item, "boarditem_form", "claim")
    item.refresh_from_db()
    assert item.status == BoardStatus.IN_PROGRESS
