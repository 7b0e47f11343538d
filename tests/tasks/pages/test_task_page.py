"""The task page and its live fragment."""

from __future__ import annotations

import itertools
import json
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from codex.events.models import Event, EventKind
from codex.fleet.models import AgentRun
from codex.tasks.models import Artifact, ReviewReport, VerificationReport
from codex.tasks.pages import views
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db

_sessions = itertools.count(1)


def page(client, task):
    return client.get(reverse("pages:task", args=[task.task_id]))


def fragment(client, task, **params):
    response = client.get(reverse("pages:task_fragment", args=[task.task_id]), params)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    return json.loads(response.content)


def add_events(task, count: int) -> None:
    for index in range(count):
        Event.log(
            EventKind.TOOL,
            actor=f"agent:dev-{index}",
            reason=f"tool call {index}",
            task=task,
        )


def run(task, cost: str, tokens: int) -> AgentRun:
    return AgentRun.objects.begin(
        by="worker:test",
        session_id=f"session-page-{next(_sessions)}",
        task=task,
        cost_usd=Decimal(cost),
        input_tokens=tokens,
        output_tokens=1,
    )


def test_shows_request_state_timeline_cost_and_pull_request(member_client):
    task = make_task(title="Add login", acceptance_criteria="- Users can **log in**")
    task.perform("start", by="worker:w1", reason="picked up by w1")
    put_in_state(task, pr_url="https://github.com/acme/web/pull/7", branch="feat/x")
    run(task, "1.250000", 1000)
    run(task, "0.500000", 500)
    AgentRun.objects.begin(
        by="worker:test", session_id="elsewhere", cost_usd=Decimal("9")
    )  # another task

    response = page(member_client, task)

    content = response.content.decode()
    assert response.status_code == 200
    assert "<h1>Add login</h1>" in content
    assert "<li>Users can <strong>log in</strong></li>" in content
    assert 'data-status="in_progress"' in content
    assert "$1.75 · 1502 tokens · 2 runs" in content
    assert 'href="https://github.com/acme/web/pull/7"' in content
    assert "<code>feat/x</code>" in content
    # Timeline in order, with who and why.
    created = content.index("task created")
    started = content.index("picked up by w1")
    assert created < started
    assert "worker:w1" in content
    assert "status: pending → in_progress" in content


def test_phase_timings(member_client):
    task = put_in_state(
        make_task(),
        status="in_progress",
        phase="planning",
        phase_progress={
            "intake": {
                "status": "completed",
                "started_at": "2026-01-01T10:00:00+00:00",
                "completed_at": "2026-01-01T10:03:05+00:00",
                "agent_invocations": 2,
            },
            "planning": {
                "status": "in_progress",
                "started_at": "2026-01-01T10:03:05+00:00",
            },
        },
    )
    rows = {row["phase"]: row for row in views.phase_rows(task)}
    assert rows["intake"]["duration"] == "3m 05s"
    assert rows["intake"]["invocations"] == 2
    assert rows["planning"]["current"] is True
    assert rows["planning"]["duration"].endswith("m")  # counts up to now, hours
    assert rows["review"]["duration"] == ""
    content = page(member_client, task).content.decode()
    assert "3m 05s" in content
    assert 'class="phase-in_progress current"' in content


def test_bad_phase_progress_does_not_break_the_page(member_client):
    task = put_in_state(
        make_task(), phase_progress={"intake": {"started_at": "yesterday"}}
    )
    assert page(member_client, task).status_code == 200


def test_artifacts_render_markdown_safely_latest_version(member_client):
    task = make_task()
    Artifact.store_all(task, {"spec.md": "# Old spec"})
    Artifact.store_all(
        task,
        {
            "spec.md": "# Spec\n\n<script>alert(1)</script>\n\n"
            "[click](javascript:alert(2))\n\n"
            "![pixel](https://evil.example/p.png)\n\n- a `<b>` tag"
        },
    )
    Artifact.store_all(task, {"plan.md": "## Plan"})

    content = page(member_client, task).content.decode()

    assert "<h1>Spec</h1>" in content
    assert "Old spec" not in content
    assert "<h2>Plan</h2>" in content
    assert "<script>alert(1)" not in content
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in content
    assert "javascript:" not in content
    assert '<a rel="nofollow noopener noreferrer">click</a>' in content
    assert "evil.example" not in content
    assert "[image: pixel]" in content
    assert "<code>&lt;b&gt;</code>" in content


def test_verification_and_review_reports(member_client):
    task = make_task()
    VerificationReport.objects.create(
        task=task,
        cycle=1,
        recommendation="request_changes",
        tests_passed=9,
        tests_failed=1,
        tests_total=10,
        failures=[{"name": "test_login", "error": "<boom>", "file": "a.py"}],
        acceptance_criteria=[
            {"criterion": "Users can log in", "status": "failed", "evidence": "e1"}
        ],
        feedback={"summary": "fix the login test"},
    )
    ReviewReport.objects.create(
        task=task,
        cycle=1,
        assessment="approve",
        comments=[{"severity": "suggestion", "issue": "rename x", "file": "b.py"}],
        security={"items": [{"type": "xss", "description": "escape it"}]},
    )

    content = page(member_client, task).content.decode()

    assert "9 passed · 1 failed · 0 skipped of 10" in content
    assert "Request changes" in content
    assert "&lt;boom&gt;" in content
    assert "Users can log in" in content and "fix the login test" in content
    assert "rename x" in content and "<strong>xss</strong>: escape it" in content
    assert "0 blocking · 1 comment" in content


def test_unsafe_pull_request_url_is_not_a_link(member_client):
    task = put_in_state(make_task(), pr_url="javascript:alert(1)")
    content = page(member_client, task).content.decode()
    assert 'href="javascript:' not in content


def test_unknown_task_is_404(member_client):
    response = member_client.get(reverse("pages:task", args=["FEAT-20260101-zzzzzz"]))
    assert response.status_code == 404
    response = member_client.get(
        reverse("pages:task_fragment", args=["FEAT-20260101-zzzzzz"])
    )
    assert response.status_code == 404


def test_live_page_polls_while_running_and_not_when_finished(member_client):
    task = make_task()
    content = page(member_client, task).content.decode()
    assert 'data-terminal="false"' in content
    assert reverse("pages:task_fragment", args=[task.task_id]) in content
    assert "codex/task.js" in content

    task.perform("cancel", by="user:bob")
    assert 'data-terminal="true"' in page(member_client, task).content.decode()


def test_fragment_follows_the_task_as_it_moves(member_client):
    task = make_task()
    first = fragment(member_client, task)
    assert first["status"] == "pending"
    assert first["terminal"] is False
    assert first["events_total"] == 1
    seen = first["last_event_id"]

    quiet = fragment(member_client, task, after=seen)
    assert quiet["events"] == []
    assert quiet["last_event_id"] == seen

    task.perform("start", by="worker:w1", reason="picked up by w1")
    moved = fragment(member_client, task, after=seen)

    assert moved["status"] == "in_progress"
    assert 'data-status="in_progress"' in moved["status_html"]
    [event] = moved["events"]
    assert "picked up by w1" in event["html"]
    assert "worker:w1" in event["html"]
    assert f'data-event-id="{event["id"]}"' in event["html"]
    assert moved["last_event_id"] == event["id"] > seen
    assert moved["events_total"] == 2

    task.perform("cancel", by="user:bob", reason="not needed")
    done = fragment(member_client, task, after=moved["last_event_id"])
    assert done["terminal"] is True
    assert done["status"] == "cancelled"
    assert "not needed" in done["events"][0]["html"]


def test_fragment_event_keys_sort_like_the_event_log(member_client):
    task = make_task()
    add_events(task, 3)
    data = fragment(member_client, task)
    keys = [event["key"] for event in data["events"]]
    ordered = list(task.events.in_order().values_list("pk", flat=True))
    assert [event["id"] for event in data["events"]] == ordered
    assert keys == sorted(keys)


def test_fragment_full_timeline_and_documents_key(member_client):
    task = make_task()
    add_events(task, 2)
    before = fragment(member_client, task, full="1")
    assert before["timeline_html"].count("<tr ") == 3
    assert before["events_hidden"] == 0

    Artifact.store_all(task, {"spec.md": "# Spec"})
    after = fragment(member_client, task, full="1")
    assert after["documents_key"] != before["documents_key"]


def test_fragment_ignores_a_bad_after(member_client):
    task = make_task()
    assert len(fragment(member_client, task, after="x")["events"]) == 1


def test_timeline_shows_the_latest_events_and_counts_the_rest(
    member_client, monkeypatch
):
    monkeypatch.setattr(views, "TIMELINE_LIMIT", 3)
    task = make_task()
    add_events(task, 4)  # five events with "created"

    content = page(member_client, task).content.decode()

    assert content.count('class="event kind-') == 3
    assert "tool call 3" in content and "tool call 1" in content
    assert "tool call 0" not in content
    assert '<span id="events-hidden-count">2</span>' in content


@pytest.mark.parametrize("view", ["pages:task", "pages:task_fragment"])
def test_constant_queries_with_5_or_50_events(
    member_client, view, django_assert_max_num_queries
):
    def count_queries(task) -> int:
        url = reverse(view, args=[task.task_id])
        with CaptureQueriesContext(connection) as queries:
            assert member_client.get(url).status_code == 200
        return len(queries)

    few, many = make_task(), make_task()
    for task, count in ((few, 5), (many, 50)):
        add_events(task, count)
        run(task, "0.1", 10)
        Artifact.store_all(task, {"spec.md": "# Spec"})
        Artifact.store_all(task, {"plan.md": "# Plan"})

    assert count_queries(few) == count_queries(many)
    with django_assert_max_num_queries(12):
        member_client.get(reverse(view, args=[many.task_id]))


@pytest.mark.django_db
def test_a_finished_tasks_phase_stops_counting():
    """A task cancelled during intake shows intake stopped at the cancellation,
    not still in progress with a growing duration."""
    from datetime import timedelta

    from django.utils import timezone

    from codex.tasks.pages.views import phase_rows
    from tests.factories import make_task, put_in_state

    task = make_task()
    started = timezone.now() - timedelta(hours=2)
    finished = started + timedelta(minutes=5)
    put_in_state(
        task,
        status="cancelled",
        phase_progress={
            "intake": {"status": "in_progress", "started_at": started.isoformat()}
        },
        finished_at=finished,
    )
    intake = phase_rows(task, now=timezone.now())[0]
    assert intake["status"] == "stopped"
    assert intake["completed_at"] == finished
    assert (
        intake["duration"]
        == phase_rows(task, now=finished + timedelta(days=1))[0]["duration"]
    )
