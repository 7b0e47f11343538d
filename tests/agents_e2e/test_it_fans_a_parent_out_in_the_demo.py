"""`manage.py demo --scenario fanout`: a parent request split by the planner
into two children whose pull requests merge (spec 001: "Child agents per
parent: 1-5"; "IF all children successful: → MERGE_ALL")."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from agents.demo import git
from agents.demo_fanout import MUL, SUB
from codex.children.models import Child, FanOut
from codex.repositories.models import LocalComment, LocalPullRequest
from codex.tasks.models import Task

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_fanout_demo_merges_both_childrens_pull_requests(tmp_path):
    out = StringIO()
    call_command("demo", root=tmp_path / "demo", scenario="fanout", stdout=out)
    output = out.getvalue()

    fan_out = FanOut.objects.get()
    parent = fan_out.parent
    assert parent.status == "completed" and fan_out.state == "complete"
    children = list(Child.objects.filter(fan_out=fan_out).order_by("child_id"))
    assert [c.child_id for c in children] == ["C1", "C2"]
    # Children are tasks of their own, each with its own branch and PR.
    assert len({c.task.branch for c in children}) == 2
    assert all(c.task.status == "completed" for c in children)
    assert Task.objects.count() == 3
    analysis = fan_out.analysis
    assert analysis.merge_strategy == "MERGE_ALL"
    assert analysis.decided_by == "model"
    assert LocalPullRequest.objects.filter(state="merged").count() == 2
    bare = tmp_path / "demo" / "fanout.git"
    assert git("show", "main:sub.py", cwd=bare) == SUB
    assert git("show", "main:mul.py", cwd=bare) == MUL
    # Spec 001: "comment_body must contain "🤖 Child"" — one report per child,
    # then the analysis "Posted as issue comments".
    bodies = list(
        LocalComment.objects.filter(issue__number=fan_out.issue_number)
        .order_by("id")
        .values_list("body", flat=True)
    )
    reports = [b for b in bodies if b.startswith("🤖 Child")]
    assert len(reports) == 2 and all("complete: PR #" in b for b in reports)
    assert any("Completion analysis: MERGE_ALL" in b for b in bodies)
    assert "Demo done: the children's changes are merged." in output
