"""The scheduled gate check (codex.tasks.gate_jobs, docs/gates.md): a task
waiting at a manual merge gate completes when a person merged its pull
request on the local forge; one waiting for approval is decided from the
forge's approvals, never the requester's."""

from __future__ import annotations

import pytest

from codex.repositories.local_forge import LocalForge
from codex.repositories.models import LocalPullRequest, Repository
from codex.tasks.gate_jobs import check_merge_gates
from codex.tasks.models import Status
from tests.factories import make_task, put_in_state
from tests.integrations.git.helpers import make_remote

pytestmark = pytest.mark.django_db

BRANCH = "codex/FEAT-20260101-aaaaaa"


@pytest.fixture
def repository(tmp_path):
    bare = make_remote(tmp_path / "forge")
    return Repository.objects.create(url=f"file://{bare}")


def waiting(repository, *, mode: str, subject: str = "a" * 40, requester: str = ""):
    task = make_task(repository, requester_login=requester)
    put_in_state(task, Status.IN_PROGRESS, "release", branch=BRANCH, pr_url="x")
    return task.perform(
        "await_approval",
        by="system:pipeline",
        reason="waits",
        kind="merge",
        mode=mode,
        subject=subject,
    )


def pull(repository, state: str) -> None:
    LocalPullRequest.objects.create(
        repository=repository,
        number=1,
        head=BRANCH,
        base="main",
        title="t",
        state=state,
        head_sha="a" * 40,
    )


def test_a_merge_made_by_a_person_completes_the_task(repository):
    task = waiting(repository, mode="manual")
    pull(repository, "merged")
    assert check_merge_gates() == {"checked": 1, "merged": 1, "approved": 0}
    task.refresh_from_db()
    assert task.status == "completed" and task.pr_merged
    assert task.gates.get().decision == "merged"


def test_an_open_pull_request_leaves_it_waiting(repository):
    task = waiting(repository, mode="manual")
    pull(repository, "open")
    check_merge_gates()
    task.refresh_from_db()
    assert task.status == "escalated"


@pytest.fixture
def approvals(monkeypatch):
    found: list[dict] = []
    monkeypatch.setattr(LocalForge, "approvals", lambda self, number: list(found))
    return found


def test_an_approval_on_the_forge_decides_the_gate(repository, approvals):
    task = waiting(repository, mode="approval", requester="rita")
    pull(repository, "open")
    approvals.extend([{"login": "rita", "commit": "a" * 40}])
    check_merge_gates()
    task.refresh_from_db()
    assert task.status == "escalated"  # the requester's does not count

    approvals.append({"login": "alice", "commit": "a" * 40})
    assert check_merge_gates()["approved"] == 1
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert task.gates.get().decided_by == "github:alice"
