"""Spec 004 `instances`: "CHECK (status IN ('started', 'waiting_review',
'pr_created', 'pr_merged', 'pr_closed', 'terminated'))" and "CHECK (type IN
('coding', 'review', 'planning'))": the database refuses what the state machine
does not know, even from a raw UPDATE."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from codex.fleet.models import AgentInstance, InstanceStatus
from tests.fleet.factories import make_instance

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("status", ["running", "", "STARTED"])
def test_a_raw_update_to_an_unknown_status_is_refused(status):
    instance = make_instance()

    table = AgentInstance._meta.db_table
    with (
        pytest.raises(IntegrityError),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            f"UPDATE {table} SET status = %s WHERE id = %s", [status, instance.pk]
        )

    instance.refresh_from_db()
    assert instance.status == InstanceStatus.STARTED


@pytest.mark.parametrize("status", InstanceStatus.values)
def test_every_status_of_the_spec_is_accepted(status):
    instance = make_instance()

    AgentInstance._base_manager.filter(pk=instance.pk).update(status=status)

    assert AgentInstance.objects.get(pk=instance.pk).status == status


def test_an_unknown_type_is_refused():
    instance = make_instance()

    with pytest.raises(IntegrityError), transaction.atomic():
        AgentInstance._base_manager.filter(pk=instance.pk).update(type="sidekick")
