"""A child's release after the parent's analysis merged its pull request:
nothing is left to approve, so the release policy that wants a person to
approve merges does not escalate it (docs/children.md); an unmerged pull
request still waits for that person."""

from __future__ import annotations

import pytest

from agents.roles import release
from agents.roles.base import RoleContext, Step
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db(transaction=True)

SUBMITTED = {"merge": True, "release_notes": "Adds sub."}


class Forge:
    """Only what release reads: the branch's pull request, already merged
    (or not); merging again would be a mistake."""

    def __init__(self, state: str) -> None:
        self.state = state

    def find_pull_request(self, head: str):
        return {
            "number": 7,
            "url": "https://example.test/pull/7",
            "head": head,
            "base": "main",
            "head_sha": "a" * 40,
            "state": self.state,
            "draft": False,
            "title": "Add sub",
        }

    def merge_pull_request(self, *args, **kwargs):  # pragma: no cover
        raise AssertionError("the parent merged it already")


@pytest.fixture
def child(settings):
    settings.CODEX_RELEASE_REQUIRES_APPROVAL = True
    return put_in_state(make_task(), status="in_progress", phase="release")


def step(child, state, worktree):
    context = RoleContext(task=child, branch="codex/child")
    return Step(
        task=child,
        forge=Forge(state),
        branch="codex/child",
        worktree=worktree,
        context=context,
    )


def test_a_pull_request_the_parent_merged_completes_the_release(child, tmp_path):
    result = release.merge(step(child, "merged", tmp_path), release.ROLE, SUBMITTED)
    assert result.merged is True
    assert result.outcome != "escalate"


def test_an_open_pull_request_still_waits_for_a_person(child, tmp_path):
    result = release.merge(step(child, "open", tmp_path), release.ROLE, SUBMITTED)
    assert not result.merged and result.outcome == "escalate"
    assert "requires a person to approve" in result.reason
