"""The console action "Fan out to children": an operator names 1 to 5
children of one task on an intermediate page, and the task becomes their
parent through the same path as a planner's split (docs/children.md)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from codex.children.models import Child, FanOut
from codex.repositories.models import LocalComment
from tests.admin_forms import form_data
from tests.factories import make_repository, make_task, make_user, put_in_state

# The fan-out records each side effect before doing it (perform_once), which
# needs real commits.
pytestmark = pytest.mark.django_db(transaction=True)

TASKS = reverse("admin:tasks_task_changelist")


@pytest.fixture
def task():
    repository = make_repository("file:///srv/git/fanout-console.git")
    assert repository.is_local
    return make_task(repository, title="Add sub and mul")


def choose(client, task, **extra):
    return client.post(
        TASKS,
        {"action": "fan_out_to_children", "_selected_action": [task.pk], **extra},
    )


def test_the_page_names_children_and_the_post_fans_the_task_out(console, task):
    page = choose(console, task)
    assert page.status_code == 200
    assert b"fan-out-form" in page.content
    data = form_data(page.content.decode(), "fan-out-form")
    data.update(
        title_1=["Add sub(a, b)"],
        description_1=["sub.py and its test"],
        title_3=["Add mul(a, b)"],  # a gap is closed up: C1, C2
    )
    response = console.post(TASKS, data, follow=True)
    assert response.status_code == 200
    fan_out = FanOut.objects.get(parent=task)
    assert fan_out.expected_child_count == 2
    assert fan_out.state == "awaiting_completions"
    children = list(Child.objects.filter(fan_out=fan_out).select_related("task"))
    assert [(c.child_id, c.task.title) for c in children] == [
        ("C1", "Add sub(a, b)"),
        ("C2", "Add mul(a, b)"),
    ]
    assert "sub.py and its test" in children[0].task.description
    assert children[0].task.idempotency_key == f"fanout:{task.task_id}:C1"
    # The parent's issue on the local forge lists the children.
    opening = LocalComment.objects.get(issue__number=fan_out.issue_number)
    assert "- [ ] C2: Add mul(a, b)" in opening.body
    assert "fanned out to 2 child task(s)" in response.content.decode()
    assert fan_out.parent.events.filter(actor="user:alice").exists()


def test_a_post_without_a_title_shows_the_page_again(console, task):
    response = choose(console, task, apply="1", description_1=["no title"])
    assert response.status_code == 200
    assert b"needs a title" in response.content
    assert not FanOut.objects.exists()


def test_the_page_starts_from_the_children_the_request_lists(console):
    repository = make_repository("file:///srv/git/fanout-listed.git")
    listed = make_task(
        repository, description="Two parts.\n\n## Children\n- C1: one\n- C2: two\n"
    )
    data = form_data(choose(console, listed).content.decode(), "fan-out-form")
    assert data["title_1"] == ["one"] and data["title_2"] == ["two"]


@pytest.mark.parametrize(
    ("state", "why"),
    [
        ({"status": "completed", "phase": "release"}, "completed"),
        ({"status": "in_progress", "phase": "implementation"}, "intake or planning"),
    ],
)
def test_a_task_past_planning_or_finished_does_not_fan_out(console, task, state, why):
    put_in_state(task, **state)
    response = choose(console, task, apply="1", title_1=["x"])
    assert response.status_code == 302
    assert not FanOut.objects.exists()
    messages = console.get(TASKS).content.decode()
    assert why in messages


def test_a_task_fans_out_once(console, task):
    choose(console, task, apply="1", title_1=["x"])
    choose(console, task, apply="1", title_1=["y"], title_2=["z"])
    fan_out = FanOut.objects.get()
    assert fan_out.expected_child_count == 1
    assert Child.objects.count() == 1


def test_two_tasks_at_once_are_refused(console, task):
    other = make_task(task.repository)
    response = console.post(
        TASKS,
        {
            "action": "fan_out_to_children",
            "_selected_action": [task.pk, other.pk],
            "apply": "1",
            "title_1": "x",
        },
    )
    assert response.status_code == 302
    assert not FanOut.objects.exists()


def test_staff_without_change_permission_does_not_get_the_action(client, task):
    viewer = make_user("viewer", is_staff=True)
    viewer.user_permissions.add(
        Permission.objects.get(codename="view_task", content_type__app_label="tasks")
    )
    client.force_login(viewer)
    page = client.get(TASKS)
    assert page.status_code == 200
    assert b"fan_out_to_children" not in page.content
    response = choose(client, task, apply="1", title_1=["x"])
    assert response.status_code in (200, 302)
    assert not FanOut.objects.exists()


def test_a_team_member_outside_the_console_is_refused(client, task):
    # Operators are staff (README "Roles"); a team member given the model
    # permission is still not one.
    member = make_user("member", role="team")
    member.is_staff = False
    member.save()
    member.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["view_task", "change_task"], content_type__app_label="tasks"
        )
    )
    client.force_login(member)
    response = choose(client, task, apply="1", title_1=["x"])
    assert response.status_code == 302  # to the login page: not console staff
    assert not FanOut.objects.exists()
