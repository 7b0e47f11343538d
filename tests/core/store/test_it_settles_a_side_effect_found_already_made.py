"""A re-run that finds an effect already made closes its unfinished record.

A worker that dies after the outside system applied the effect leaves the
record `started`; the re-run sees the effect (a pull request already merged or
ready) and skips the action, so without `settle` the record stayed `started`
for good.
"""

from __future__ import annotations

import pytest

from codex.core.store.side_effects import SideEffect, SideEffectStatus, settle

pytestmark = pytest.mark.django_db


def test_it_closes_a_started_record_as_done_found_by_lookup():
    SideEffect.objects.create(key="pr:ready:1:codex/x:7", kind="pr", attempts=1)

    assert settle("pr:ready:1:codex/x:7", {"ready": 7})

    record = SideEffect.objects.get(key="pr:ready:1:codex/x:7")
    assert record.status == SideEffectStatus.DONE
    assert record.result == {"ready": 7}
    assert record.found_by_lookup
    assert record.done_at is not None


def test_it_closes_every_started_record_under_a_prefix_and_no_other():
    SideEffect.objects.create(key="pr:merge:1:7:aaa", kind="pr", attempts=1)
    SideEffect.objects.create(key="pr:merge:1:7:bbb", kind="pr", attempts=2)
    SideEffect.objects.create(key="pr:merge:1:70:ccc", kind="pr", attempts=1)

    assert settle("pr:merge:1:7:", {"merged": 7}, prefix=True)

    statuses = dict(SideEffect.objects.values_list("key", "status"))
    assert statuses == {
        "pr:merge:1:7:aaa": SideEffectStatus.DONE,
        "pr:merge:1:7:bbb": SideEffectStatus.DONE,
        "pr:merge:1:70:ccc": SideEffectStatus.STARTED,
    }


def test_it_leaves_a_done_record_and_makes_none_for_an_unattempted_effect():
    SideEffect.objects.create(
        key="issue:close:1:3",
        kind="issue",
        status=SideEffectStatus.DONE,
        result={"closed": 3},
    )

    assert not settle("issue:close:1:3", {"closed": 99})
    assert not settle("issue:close:1:4", {"closed": 4})

    assert SideEffect.objects.get(key="issue:close:1:3").result == {"closed": 3}
    assert not SideEffect.objects.filter(key="issue:close:1:4").exists()
