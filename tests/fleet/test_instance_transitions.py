"""Spec 004's five observable transitions, their sources and targets, and the
event each writes to the one event log."""

from __future__ import annotations

import pytest
from django_fsm import TransitionNotAllowed

from codex.core.store.refusals import VersionConflict
from codex.events.models import Event, EventKind
from codex.fleet.models import AgentInstance, InstanceStatus, InstanceType
from tests.factories import make_task
from tests.fleet.factories import make_instance, put_instance_in

pytestmark = pytest.mark.django_db

S = InstanceStatus
ALLOWED = {
    "request_review": ({S.STARTED, S.WAITING_REVIEW}, S.WAITING_REVIEW),
    "create_pr": ({S.STARTED, S.WAITING_REVIEW}, S.PR_CREATED),
    "merged": ({S.PR_CREATED}, S.PR_MERGED),
    "closed": ({S.PR_CREATED}, S.PR_CLOSED),
    "terminate": (set(S.values) - {S.TERMINATED}, S.TERMINATED),
}
ARGUMENTS = {"create_pr": {"pr_number": 42}}


@pytest.mark.parametrize("action", sorted(ALLOWED))
@pytest.mark.parametrize("status", S.values)
def test_each_transition_moves_only_from_its_sources(action, status):
    sources, target = ALLOWED[action]
    instance = put_instance_in(make_instance(), status)
    if status in sources:
        instance.perform(action, by="worker:1", **ARGUMENTS.get(action, {}))
        instance.refresh_from_db()
        assert instance.status == target
    else:
        with pytest.raises(TransitionNotAllowed):
            instance.perform(action, by="worker:1", **ARGUMENTS.get(action, {}))
        instance.refresh_from_db()
        assert instance.status == status


def test_a_new_instance_is_started_and_logged():
    instance = make_instance()
    assert instance.status == S.STARTED
    event = Event.objects.get(subject="instance:work-123-a1")
    assert (event.kind, event.target, event.actor) == (
        "instance",
        "started",
        "worker:test",
    )


def test_a_transition_writes_an_instance_event_with_the_task():
    task = make_task()
    instance = make_instance(task=task)
    instance.perform(
        "create_pr", by="agent:work-123-a1", reason="PR opened", pr_number=9
    )
    event = Event.objects.filter(kind=EventKind.INSTANCE).latest("id")
    assert event.subject == "instance:work-123-a1"
    assert (event.field, event.source, event.target) == (
        "status",
        "started",
        "pr_created",
    )
    assert (event.actor, event.reason) == ("agent:work-123-a1", "PR opened")
    assert event.task == task
    assert event.data["instance"] == instance.pk


def test_the_default_reason_is_the_transitions_own():
    instance = put_instance_in(make_instance(), S.PR_CREATED)
    instance.perform("merged", by="webhook:github")
    assert Event.objects.latest("id").reason == "pull request merged"


def test_create_pr_records_the_pull_request():
    instance = make_instance()
    instance.perform(
        "create_pr", by="agent", pr_number=17, pr_url="https://github.com/a/b/pull/17"
    )
    instance.refresh_from_db()
    assert (instance.pr_number, instance.pr_url) == (
        17,
        "https://github.com/a/b/pull/17",
    )


def test_terminate_records_when_it_ended():
    instance = make_instance()
    assert instance.ended_at is None
    instance.perform("terminate", by="user:alice")
    instance.refresh_from_db()
    assert instance.ended_at is not None


@pytest.mark.parametrize("type_", [InstanceType.REVIEW, InstanceType.PLANNING])
def test_only_coding_agents_request_reviews(type_):
    instance = make_instance(type_)
    with pytest.raises(TransitionNotAllowed):
        instance.perform("request_review", by="agent")


def test_a_stale_copy_cannot_transition_and_logs_nothing():
    instance = make_instance()
    stale = AgentInstance.objects.get(pk=instance.pk)
    instance.perform("create_pr", by="agent", pr_number=1)
    events = Event.objects.count()
    with pytest.raises(VersionConflict):
        stale.perform("terminate", by="user:bob")
    assert Event.objects.count() == events
    assert stale.status == S.STARTED  # the in-memory copy is left as it was read
    assert AgentInstance.objects.get(pk=instance.pk).status == S.PR_CREATED


def test_heartbeats_do_not_make_a_transition_conflict():
    instance = make_instance()
    copy = AgentInstance.objects.get(pk=instance.pk)
    copy.beat(active=True)
    copy.attach_process(pid=4242, host="worker-1")
    instance.perform("terminate", by="user:alice")
    copy.refresh_from_db()
    assert copy.status == S.TERMINATED
    assert (copy.process_id, copy.process_host) == (4242, "worker-1")
    assert copy.heartbeat_at is not None and copy.started_at is not None


def test_status_cannot_be_bulk_updated():
    make_instance()
    with pytest.raises(Exception, match="bypass"):
        AgentInstance.objects.update(status=S.TERMINATED)
