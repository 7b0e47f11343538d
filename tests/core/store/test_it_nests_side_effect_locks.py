"""`exclusive` locks nest: the progress comment's job holds one while
perform_once takes another. On the embedded database they are striped file
locks, so two keys can share a file; a thread holding it must not wait on
itself, while another thread still waits (codex.core.store.side_effects)."""

from __future__ import annotations

import hashlib
import itertools
import threading

import pytest
from django.db import connection

from codex.core.store.side_effects import exclusive

pytestmark = pytest.mark.django_db(transaction=True)


def two_keys_on_one_stripe() -> tuple[str, str]:
    """Two keys whose digests start with the same byte (the same file)."""
    seen: dict[int, str] = {}
    for n in itertools.count():
        key = f"key-{n}"
        stripe = hashlib.sha256(key.encode()).digest()[0]
        if stripe in seen:
            return seen[stripe], key
        seen[stripe] = key
    raise AssertionError("unreachable")


def test_a_nested_lock_on_the_same_stripe_does_not_wait_on_itself():
    outer, inner = two_keys_on_one_stripe()
    done = threading.Event()

    def nested() -> None:
        try:
            with exclusive(outer), exclusive(inner):
                done.set()
        finally:
            connection.close()

    thread = threading.Thread(target=nested, daemon=True)
    thread.start()
    assert done.wait(10), "the inner lock waited for the outer one"


def test_another_thread_still_waits_for_the_lock():
    outer, inner = two_keys_on_one_stripe()
    entered = threading.Event()

    def take() -> None:
        try:
            with exclusive(outer):
                entered.set()
        finally:
            connection.close()

    with exclusive(outer), exclusive(inner):
        thread = threading.Thread(target=take, daemon=True)
        thread.start()
        assert not entered.wait(0.5), "another thread took the lock held here"
    assert entered.wait(10)
    thread.join(10)
