"""A task's progress comment is edited by at most one queued job at a time
(docs/gates.md): the changes made while it waits are carried by it; it is
held back in the queue until CODEX_PROGRESS_MIN_SECONDS after the last edit,
so no worker sleeps for it; and a change still open when the job starts is
read by it (PostgreSQL, real threads)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from codex.core.workers.brokers import ClaimingORM
from codex.repositories.local_forge import LocalForge
from codex.repositories.models import LocalComment, Repository
from codex.tasks.models import ProgressEdit, Status, Task
from codex.tasks.progress import progress_marker, update_progress_comment
from tests.factories import make_task, put_in_state
from tests.integrations.git.helpers import make_remote

pytestmark = pytest.mark.django_db(transaction=True)

PROGRESS = "codex.tasks.progress.update_progress_comment"


@pytest.fixture
def task(tmp_path, settings):
    settings.CODEX_PROGRESS_MIN_SECONDS = 30
    bare = make_remote(tmp_path / "forge")
    repository = Repository.objects.create(url=f"file://{bare}")
    return put_in_state(
        make_task(repository, issue_number=5), Status.IN_PROGRESS, "planning"
    )


def progress_edits() -> list[OrmQ]:
    """The queued edit jobs of progress comments, oldest first."""
    rows = OrmQ.objects.order_by("id")
    return [r for r in rows if SignedPackage.loads(r.payload)["func"] == PROGRESS]


def toggle(task: Task, times: int) -> Task:
    """Pause or resume `task` through the real transitions, `times` saves."""
    for _ in range(times):
        paused = task.status == Status.PAUSED
        task.perform("resume" if paused else "pause", by="user:ann")
    return task


def the_comment(task: Task) -> LocalComment:
    [comment] = LocalComment.objects.filter(body__contains=progress_marker(task))
    return comment


def on_own_connection(
    work: Callable[[], None], errors: list[BaseException]
) -> threading.Thread:
    """A thread running `work` on its own connection (closed after); what it
    raises goes to `errors`, for the test to assert on."""

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # reported to the test
            errors.append(exc)
        finally:
            connection.close()

    return threading.Thread(target=run)


def taken_ids(broker: ClaimingORM) -> list[int]:
    return [pk for pk, _ in broker.dequeue() or []]


def no_sleep(monkeypatch):
    def refuse(seconds: float) -> None:
        raise AssertionError(f"the job slept {seconds} s")

    monkeypatch.setattr("codex.tasks.progress.time.sleep", refuse)


def test_changes_made_while_an_edit_waits_are_carried_by_it(task, monkeypatch):
    toggle(task, 3)  # paused, resumed, paused: three changes
    assert len(progress_edits()) == 1
    no_sleep(monkeypatch)
    assert update_progress_comment(task.task_id) == "posted"
    assert "status: **paused**" in the_comment(task).body
    # The edit ran: the next change queues the next one.
    toggle(task, 1)
    assert len(progress_edits()) == 2


def test_the_next_edit_is_held_back_until_the_least_interval(task, monkeypatch):
    toggle(task, 1)
    update_progress_comment(task.task_id)
    edited_at = ProgressEdit.objects.get(task=task).edited_at
    OrmQ.objects.all().delete()

    toggle(task, 3)  # resumed, paused, resumed
    [held] = progress_edits()
    assert held.lock == edited_at + timedelta(seconds=30)
    broker = ClaimingORM()
    monkeypatch.setattr("codex.core.workers.brokers.Conf.POLL", 0)
    # Other jobs of the change (the resumed task's next step) go at once.
    assert held.pk not in taken_ids(broker), "taken before its time"
    later = held.lock + timedelta(milliseconds=1)
    monkeypatch.setattr("codex.core.workers.brokers.timezone.now", lambda: later)
    assert taken_ids(broker) == [held.pk]

    # Run when due, it edits at once, with the newest state.
    monkeypatch.setattr("codex.tasks.progress.timezone.now", lambda: later)
    no_sleep(monkeypatch)
    assert update_progress_comment(task.task_id) == "edited"
    assert "status: **in progress**" in the_comment(task).body


def test_an_edit_that_would_change_nothing_is_skipped(task):
    toggle(task, 1)
    update_progress_comment(task.task_id)
    assert update_progress_comment(task.task_id) == "unchanged"


def test_without_a_broker_that_holds_jobs_back_the_job_waits(
    task, settings, monkeypatch
):
    settings.CODEX_PROGRESS_MIN_SECONDS = 0
    toggle(task, 1)
    update_progress_comment(task.task_id)
    settings.CODEX_PROGRESS_MIN_SECONDS = 30
    slept: list[float] = []
    monkeypatch.setattr("codex.tasks.progress.time.sleep", slept.append)
    toggle(task, 1)  # resumed: queued without a delay, as Redis would run it
    OrmQ.objects.update(lock=timezone.now())
    assert update_progress_comment(task.task_id) == "edited"
    assert len(slept) == 1 and 25 < slept[0] <= 30


@pytest.mark.postgresql
def test_a_change_still_open_when_the_edit_starts_is_read_by_it(task, settings):
    settings.CODEX_PROGRESS_MIN_SECONDS = 0
    toggle(task, 1)  # paused; its edit is queued
    changed, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def change() -> None:
        # A change that found the edit queued and has not committed yet.
        with transaction.atomic():
            Task.objects.get(pk=task.pk).perform("resume", by="user:ann")
            changed.set()
            release.wait(30)

    def edit() -> None:
        results.append(update_progress_comment(task.task_id))

    results: list[str] = []
    changer = on_own_connection(change, errors)
    changer.start()
    assert changed.wait(30)
    editor = on_own_connection(edit, errors)
    editor.start()
    editor.join(1.0)
    assert editor.is_alive(), "the edit did not wait for the open change"
    release.set()
    changer.join(30)
    editor.join(30)
    assert errors == [] and results == ["posted"]
    assert "status: **in progress**" in the_comment(task).body
    assert len(progress_edits()) == 1, "the open change queued a second edit"


@pytest.mark.postgresql
def test_of_two_changes_at_once_only_the_first_queues_an_edit(task):
    ProgressEdit.objects.update_or_create(task=task, defaults={"due_at": None})
    requested, release = threading.Event(), threading.Event()
    found: dict[str, object] = {}
    errors: list[BaseException] = []

    def first() -> None:
        with transaction.atomic():
            found["first"] = ProgressEdit.request(task.pk)
            requested.set()
            release.wait(30)

    def second() -> None:
        with transaction.atomic():
            found["second"] = ProgressEdit.request(task.pk)

    one, two = on_own_connection(first, errors), on_own_connection(second, errors)
    one.start()
    assert requested.wait(30)
    two.start()
    two.join(1.0)
    assert two.is_alive(), "the second change did not wait for the first's lock"
    release.set()
    one.join(30)
    two.join(30)
    assert errors == []
    # The second read the row as the first committed it: an edit is queued.
    assert found["first"] is not None and found["second"] is None
    assert ProgressEdit.objects.get(task=task).due_at == found["first"]


def test_an_edit_whose_job_never_came_does_not_silence_the_comment(task, settings):
    toggle(task, 1)
    [queued] = progress_edits()
    queued.delete()  # lost: a Redis restart, a job given up before it ran
    retry = settings.Q_CLUSTER["retry"]
    long_ago = timezone.now() - timedelta(seconds=retry + 1)
    ProgressEdit.objects.filter(task=task).update(due_at=long_ago)
    toggle(task, 1)
    assert len(progress_edits()) == 1, "the next change queued no edit"


@pytest.mark.postgresql
def test_two_edits_at_once_land_in_order(task, settings, monkeypatch):
    settings.CODEX_PROGRESS_MIN_SECONDS = 0
    update_progress_comment(task.task_id)  # posted: pending
    toggle(task, 1)  # paused
    editing, release = threading.Event(), threading.Event()
    real_edit = LocalForge.edit_comment

    def slow_first_edit(forge, comment_id, body):
        if not editing.is_set():
            editing.set()  # the first edit has read "paused"; it waits here
            release.wait(30)
        return real_edit(forge, comment_id, body)

    monkeypatch.setattr(LocalForge, "edit_comment", slow_first_edit)
    errors: list[BaseException] = []

    def edit() -> None:
        update_progress_comment(task.task_id)

    first = on_own_connection(edit, errors)
    first.start()
    assert editing.wait(30)
    Task.objects.get(pk=task.pk).perform("resume", by="user:ann")
    second = on_own_connection(edit, errors)  # reads "in progress"
    second.start()
    second.join(1.0)
    release.set()
    first.join(30)
    second.join(30)
    assert errors == []
    assert "status: **in progress**" in the_comment(task).body
