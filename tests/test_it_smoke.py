import pytest

from tests.factories import make_task


@pytest.mark.django_db
def test_it_creates_a_pending_task():
    task = make_task()
    assert task.status == "pending"
