"""The repository's merge gate holds for a parent's children too: with
`approval` or `manual`, the analysis merges nothing itself; the parent
escalates naming the pull requests a person merges, in order."""

from __future__ import annotations

import pytest

from codex.repositories.models import MergeGate
from codex.tasks.models import Escalation, Task
from tests.children.harness import fan_out, succeed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("gate", [MergeGate.APPROVAL, MergeGate.MANUAL])
def test_a_gated_repository_gets_no_merge_from_codex(memory_forge, gate):
    row = fan_out(2)
    repository = row.parent.repository
    repository.merge_gate = gate
    repository.save(update_fields=["merge_gate"])
    succeed(memory_forge, row, "C1", 41)
    succeed(memory_forge, row, "C2", 42)
    row.refresh_from_db()
    assert row.analysis.merge_strategy == "MERGE_ALL"
    assert memory_forge.merged == []
    parent = Task.objects.get(pk=row.parent_id)
    assert parent.status == "escalated"
    detail = Escalation.objects.get(task=parent).detail
    assert f"merge gate is {gate}" in detail and "#41, #42" in detail


def test_an_automatic_repository_still_merges(memory_forge):
    row = fan_out(2)
    succeed(memory_forge, row, "C1", 51)
    succeed(memory_forge, row, "C2", 52)
    assert memory_forge.merged == [51, 52]
